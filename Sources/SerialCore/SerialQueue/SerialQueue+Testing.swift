// Test hooks: package-only views of a queue's insides.

extension SerialQueue {
    /// How many items the FIFO's storage holds without growing (to see memory given back).
    package var _fifoCapacity: Int {
        self.core.mutex.withLock { self.core.state.fifo.capacity }
    }

    /// Delayed works waiting and not cancelled (`delayedWorkCount` counts cancelled ones until
    /// the queue purges them, which depends on when its worker looks).
    package var _pendingDelayedWorkCount: Int {
        self.core.mutex.withLock { self.core.state.delayed.pendingCount }
    }

    /// Producers waiting for room in this bounded queue.
    package var _roomWaiters: Int {
        self.core.mutex.withLock { self.core.state.roomWaiters }
    }

    /// Whether this queue is armed to wake `watchdog` when it gets work.
    package func _isArmed(for watchdog: StallWatchdog) -> Bool {
        self.core.mutex.withLock { self.core.state.armedWatchdogs.contains(watchdog.core) }
    }
}
