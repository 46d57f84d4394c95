/// Rows about the queue itself: async throughput, sync round trips.
enum QueueRows {
    /// `async_1p`: ns per task, `count` empty tasks from one producer, until drained.
    static func async1p<P: Peer>(_ runner: Runner, _: P.Type, count: Int) -> Double {
        let peer = P(label: "cmp-async1p")
        defer { peer.close() }
        let once = { () -> Double in
            let started = Clock.now()
            for _ in 0..<count { peer.execute {} }
            peer.drain()
            return Double(Clock.now() - started) / Double(count)
        }
        return runner.median("async_1p \(P.column) ×\(formatCount(count))", warmUp: { _ = once() }, once)
    }

    /// `async_2p`: ns per task, two producers of `count / 2` empty tasks each, until drained.
    static func async2p<P: Peer>(_ runner: Runner, _: P.Type, count: Int) -> Double {
        let peer = P(label: "cmp-async2p")
        defer { peer.close() }
        let perProducer = count / 2
        let once = { () -> Double in
            let times = runThreads(2) { _ in
                for _ in 0..<perProducer { peer.execute {} }
            }
            peer.drain()
            return Double(Clock.now() - times.released) / Double(2 * perProducer)
        }
        return runner.median("async_2p \(P.column) ×\(formatCount(count))", warmUp: { _ = once() }, once)
    }

    /// `sync_uncontended`: ns per empty sync call from one thread on an idle executor.
    static func syncUncontended<P: Peer>(_ runner: Runner, _: P.Type, count: Int) -> Double {
        let peer = P(label: "cmp-sync")
        defer { peer.close() }
        let once = { () -> Double in
            let started = Clock.now()
            for _ in 0..<count { peer.syncCall() }
            return Double(Clock.now() - started) / Double(count)
        }
        return runner.median("sync_uncontended \(P.column) ×\(formatCount(count))", warmUp: { _ = once() }, once)
    }

    /// `sync_contended`: ns per sync call, two threads making `syncCount` calls each while a
    /// third enqueues `asyncCount` empty tasks; timed until both sync threads are done.
    static func syncContended<P: Peer>(_ runner: Runner, _: P.Type, syncCount: Int, asyncCount: Int) -> Double {
        let peer = P(label: "cmp-syncc")
        defer { peer.close() }
        let once = { () -> Double in
            let times = withSwitchCount("\(P.column)", operations: 2 * syncCount) {
                runThreads(3) { index in
                    if index < 2 {
                        for _ in 0..<syncCount { peer.syncCall() }
                    } else {
                        for _ in 0..<asyncCount { peer.execute {} }
                    }
                }
            }
            peer.drain()
            return Double(times.elapsed(0..<2)) / Double(2 * syncCount)
        }
        return runner.median(
            "sync_contended \(P.column) 2×\(formatCount(syncCount)) sync + \(formatCount(asyncCount)) async",
            warmUp: { _ = once() }, once)
    }
}
