import Glibc

/// Rows about many queues: `pingpong_loaded_p50/p99` (a hop with every core busy),
/// `queues_10k` (creating queues) and `starfish` (hops among 1,000 queues).
enum PoolRows {
    static let plans: [RowPlan] = [
        RowPlan(names: ["pingpong_loaded_p50", "pingpong_loaded_p99"]) { runner in Self.loadedPingPong(runner) },
        RowPlan(names: ["queues_10k"]) { runner in [Self.queuesRow(runner)] },
        RowPlan(names: ["starfish"]) { runner in [Self.starfishRow(runner)] },
    ]

    // MARK: pingpong_loaded

    static func loadedPingPong(_ runner: Runner) -> [Row] {
        var p50 = Row(name: "pingpong_loaded_p50", unit: "ns/hop", goals: [.pooledRatio(.dispatch, atMost: 1)])
        var p99 = Row(name: "pingpong_loaded_p99", unit: "ns/hop")
        let hops = 10_000
        let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        func add<P: Peer>(_: P.Type) {
            guard runner.includes(P.column) else { return }
            let hogs = Hogs(count: cores)
            defer { hogs.end() }
            let result = PingPongRows.measure(runner, P.self, hops: hops)
            p50.values[P.column] = result.p50
            p99.values[P.column] = result.p99
            p50.counts[P.column] = hops
            p99.counts[P.column] = hops
        }
        add(SerialPeer.self)
        add(PooledPeer.self)
        add(DispatchPeer.self)
        add(NIOPeer.self)
        p50.notes.append("pingpong_p50's hop while \(cores) busy-loop threads (one per core) run at the same priority")
        return [p50, p99]
    }

    // MARK: queues_10k

    static func queuesRow(_ runner: Runner) -> Row {
        var row = Row(name: "queues_10k", unit: "ns/queue")
        let count = 10_000
        func add<P: Peer>(_: P.Type) {
            guard runner.includes(P.column) else { return }
            let (nanoseconds, resident) = Self.createQueues(runner, P.self, count: count)
            row.values[P.column] = nanoseconds
            row.counts[P.column] = count
            row.notes.append(
                "\(P.column): \(formatNumber(resident)) bytes of RSS per live queue (median; it counts touched thread "
                    + "stacks, and reuses of memory that earlier rows freed make it read low)")
        }
        add(SerialPeer.self)
        add(PooledPeer.self)
        add(DispatchPeer.self)
        row.notes.append(
            "create \(formatCount(count)) queues, one async each, wait until all ran; timed from the first creation to the "
                + "last run (the queues are closed afterwards, untimed). nio: no equivalent (an EventLoop is a thread)")
        if runner.includes(.pooled) {
            let mebibytes = runChildProcess(["--pooled-memory", "100000"]).flatMap {
                Double($0.split(separator: "\n").last.map(String.init) ?? "")
            } ?? .nan
            row.notes.append(
                "pooled: 100k queues alive (each ran one async) add \(formatNumber(mebibytes)) MiB of RSS in a fresh process, "
                    + "\(formatNumber(mebibytes * 1_048_576 / 100_000)) bytes per queue (goal ≤ 64 MiB \(mebibytes <= 64 ? "✓" : "✗"))")
        }
        return row
    }

    /// ns per queue to create `count` queues and run one async on each; RSS bytes per live queue.
    static func createQueues<P: Peer>(_ runner: Runner, _: P.Type, count: Int) -> (Double, Double) {
        var perQueueResident: [Double] = []
        let nanoseconds = runner.median("queues_10k \(P.column) ×\(formatCount(count))") {
            let before = residentBytes()
            let done = Latch(count: count)
            var peers: [P] = []
            peers.reserveCapacity(count)
            let started = Clock.now()
            for index in 0..<count {
                let peer = P(label: "cmp-q\(index)")
                peer.execute { done.countDown() }
                peers.append(peer)
            }
            done.wait(seconds: 300, "\(P.column) creating \(count) queues")
            let elapsed = Clock.now() - started
            perQueueResident.append(Double(residentBytes() - before) / Double(count))
            for peer in peers { peer.close() }
            return Double(elapsed) / Double(count)
        }
        return (nanoseconds, Statistics.median(perQueueResident))
    }

    /// MiB of RSS that `count` live pooled queues add, each having run one async. Run in a fresh
    /// child process (`compare --pooled-memory N`), where no freed memory of earlier rows hides it.
    static func pooledMemory(count: Int) -> Double {
        _ = PooledPeer.pool  // the pool's threads are not the queues' cost
        let before = residentBytes()
        let done = Latch(count: count)
        var peers: [PooledPeer] = []
        peers.reserveCapacity(count)
        for index in 0..<count {
            let peer = PooledPeer(label: "cmp-m\(index)")
            peer.execute { done.countDown() }
            peers.append(peer)
        }
        done.wait(seconds: 300, "pooled: \(count) queues")
        let added = Double(residentBytes() - before) / (1024 * 1024)
        log("  pooled: \(formatCount(count)) live queues add \(formatNumber(added)) MiB of RSS")
        for peer in peers { peer.close() }
        return added
    }

    // MARK: starfish

    static func starfishRow(_ runner: Runner) -> Row {
        var row = Row(name: "starfish", unit: "ns/hop")
        let (queues, hops) = (1_000, 1_000)
        func add<P: Peer>(_: P.Type) {
            guard runner.includes(P.column) else { return }
            row.values[P.column] = Self.starfish(runner, P.self, queues: queues, hops: hops)
            row.counts[P.column] = queues * hops
        }
        add(SerialPeer.self)
        add(PooledPeer.self)
        add(DispatchPeer.self)
        row.notes.append(
            "\(formatCount(queues)) queues, one token starting on each; every token hops \(formatCount(hops)) times, "
                + "each hop an async to a pseudo-random queue from work on the previous one; timed until all tokens "
                + "finished. nio: no equivalent (an EventLoop is a thread)")
        return row
    }

    static func starfish<P: Peer>(_ runner: Runner, _: P.Type, queues: Int, hops: Int) -> Double {
        let peers = (0..<queues).map { P(label: "cmp-star\($0)") }
        defer { for peer in peers { peer.close() } }
        let once = { (hops: Int) -> Double in
            let done = Latch(count: queues)
            let star = Starfish(peers: peers, hops: hops, done: done)
            let started = Clock.now()
            for token in 0..<queues { star.send(token: token, hop: 0) }
            done.wait(seconds: 300, "\(P.column) starfish")
            return Double(Clock.now() - started) / Double(queues * hops)
        }
        return runner.median("starfish \(P.column) \(formatCount(queues))×\(formatCount(hops))", warmUp: { _ = once(hops / 10) }) {
            once(hops)
        }
    }

    private final class Starfish<P: Peer>: Sendable {
        let peers: [P]
        let hops: Int
        let done: Latch

        init(peers: [P], hops: Int, done: Latch) {
            self.peers = peers
            self.hops = hops
            self.done = done
        }

        func send(token: Int, hop: Int) {
            let target = (token &* 7919 &+ hop &* 104_729) % self.peers.count
            self.peers[target].execute { self.arrived(token: token, hop: hop) }
        }

        private func arrived(token: Int, hop: Int) {
            if hop + 1 == self.hops {
                self.done.countDown()
            } else {
                self.send(token: token, hop: hop + 1)
            }
        }
    }
}
