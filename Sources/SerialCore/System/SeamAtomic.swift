import Synchronization

/// An atomic value through which the runtime's threads hand something to each other without a
/// lock: a turn, a `next` slot, the `sync` door, a count another thread decides by.
///
/// Seam: in an ordinary build each operation is the `Atomic` operation itself. The wrapper holds
/// nothing but the `Atomic`, stays `~Copyable` storage inside its owner, and its operations are
/// `@_transparent` (inlined before optimization, so the caller's constant ordering reaches
/// `Atomic` as it must): the same instructions as a bare `Atomic`. In a simulation build, an
/// operation by a simulated thread is first a scheduling point (`SimulationKernel.atomicStep`),
/// so another thread may run between any two of them; then the real operation runs. Every other
/// thread runs the plain operation.
///
/// Only the operations the runtime uses exist here, with `Atomic`'s names and orderings.
/// `Atomic` defines its operations per storage width, so they are spelled once per width used.
///
/// Package-wide: the services above SerialCore (timers, countdowns, polling, requests) put their
/// own hand-off atomics through it too. Their builds do not define `SERIAL_SIMULATION`; that does
/// not matter, since the `#if` below is decided when SerialCore compiles, and the inlined body
/// carries SerialCore's choice.
package struct SeamAtomic<Value: AtomicRepresentable>: ~Copyable {
    @usableFromInline let value: Atomic<Value>
    #if SERIAL_SIMULATION
    /// This atomic's identity in a simulation run (see `SimulationKernel.atomicStep`).
    @usableFromInline let simulationTag = Atomic<Int>(0)
    #endif

    @_transparent
    @usableFromInline package init(_ initialValue: consuming Value) {
        self.value = Atomic(initialValue)
    }

    /// A scheduling point before operation `operation`, when the caller is a simulated thread.
    @_transparent
    @usableFromInline borrowing func step(_ operation: SeamAtomicOperation) {
        #if SERIAL_SIMULATION
        self.simulationStep(operation)
        #endif
    }

    #if SERIAL_SIMULATION
    /// Out of line: the simulation's bookkeeping stays in SerialCore, whichever module inlined
    /// the operation.
    @inline(never)
    @usableFromInline borrowing func simulationStep(_ operation: SeamAtomicOperation) {
        if let thread = SimulatedThread.current {
            thread.kernel.atomicStep(operation, on: self.simulationTag, by: thread)
        }
    }
    #endif
}

extension SeamAtomic: Sendable where Value: Sendable {}

/// The operations of `SeamAtomic`, as a simulation run's trace records them.
@usableFromInline enum SeamAtomicOperation: UInt64 {
    case load = 0x50
    case store
    case exchange
    case compareExchange
    case add
    case subtract
}

extension SeamAtomic where Value.AtomicRepresentation == _Atomic8BitStorage {
    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    @usableFromInline package borrowing func load(ordering: AtomicLoadOrdering) -> Value {
        self.step(.load)
        return self.value.load(ordering: ordering)
    }

    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    @usableFromInline package borrowing func store(_ desired: consuming Value, ordering: AtomicStoreOrdering) {
        self.step(.store)
        self.value.store(desired, ordering: ordering)
    }

    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    @usableFromInline package borrowing func exchange(_ desired: consuming Value, ordering: AtomicUpdateOrdering) -> Value {
        self.step(.exchange)
        return self.value.exchange(desired, ordering: ordering)
    }

    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    @usableFromInline package borrowing func compareExchange(
        expected: consuming Value, desired: consuming Value, ordering: AtomicUpdateOrdering
    ) -> (exchanged: Bool, original: Value) {
        self.step(.compareExchange)
        return self.value.compareExchange(expected: expected, desired: desired, ordering: ordering)
    }
}

extension SeamAtomic where Value.AtomicRepresentation == _Atomic64BitStorage {
    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    @usableFromInline package borrowing func load(ordering: AtomicLoadOrdering) -> Value {
        self.step(.load)
        return self.value.load(ordering: ordering)
    }

    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    @usableFromInline package borrowing func store(_ desired: consuming Value, ordering: AtomicStoreOrdering) {
        self.step(.store)
        self.value.store(desired, ordering: ordering)
    }

    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    @usableFromInline package borrowing func exchange(_ desired: consuming Value, ordering: AtomicUpdateOrdering) -> Value {
        self.step(.exchange)
        return self.value.exchange(desired, ordering: ordering)
    }

    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    @usableFromInline package borrowing func compareExchange(
        expected: consuming Value, desired: consuming Value, ordering: AtomicUpdateOrdering
    ) -> (exchanged: Bool, original: Value) {
        self.step(.compareExchange)
        return self.value.compareExchange(expected: expected, desired: desired, ordering: ordering)
    }
}

extension SeamAtomic where Value == Int {
    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    @discardableResult
    @usableFromInline package borrowing func add(_ operand: Int, ordering: AtomicUpdateOrdering) -> (oldValue: Int, newValue: Int) {
        self.step(.add)
        return self.value.add(operand, ordering: ordering)
    }

    @_semantics("atomics.requires_constant_orderings")
    @_transparent
    @discardableResult
    @usableFromInline package borrowing func subtract(_ operand: Int, ordering: AtomicUpdateOrdering) -> (oldValue: Int, newValue: Int) {
        self.step(.subtract)
        return self.value.subtract(operand, ordering: ordering)
    }
}

#if SERIAL_SIMULATION
extension SeamAtomic where Value.AtomicRepresentation == _Atomic64BitStorage {
    /// The value, read without a scheduling point: for the simulator's invariant checks, which run
    /// under the kernel's lock while every other simulated thread is stopped (`SimulationInvariant`).
    borrowing func valueForInvariantCheck() -> Value {
        self.value.load(ordering: .sequentiallyConsistent)
    }
}
#endif
