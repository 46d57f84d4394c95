/// `pingpong_p50` / `pingpong_p99`: latency of one hop between two executors, each hop enqueued
/// by work running on the other one, from the enqueue to the start of the work.
enum PingPongRows {
    /// Returns the medians of p50 and p99 in ns per hop.
    static func measure<P: Peer>(_ runner: Runner, _: P.Type, hops: Int) -> (p50: Double, p99: Double) {
        let ping = P(label: "cmp-ping")
        let pong = P(label: "cmp-pong")
        defer {
            ping.close()
            pong.close()
        }
        let once = { (hops: Int) -> [Double] in
            let rally = Rally(ping: ping, pong: pong, hops: hops)
            withSwitchCount("\(P.column)", operations: hops) {
                rally.start()
                rally.done.wait(seconds: 120, "\(P.column) ping-pong")
            }
            return rally.samples.percentiles([0.5, 0.99])
        }
        let result = runner.medians("pingpong \(P.column) ×\(formatCount(hops)) hops", warmUp: { _ = once(hops / 10) }) {
            once(hops)
        }
        return (result[0], result[1])
    }

    /// One rally: `hops` enqueues alternating between the two executors.
    private final class Rally<P: Peer>: Sendable {
        let ping: P
        let pong: P
        let hops: Int
        let samples: Samples
        let done = Latch()

        init(ping: P, pong: P, hops: Int) {
            self.ping = ping
            self.pong = pong
            self.hops = hops
            self.samples = Samples(count: hops)
        }

        func start() {
            let sent = Clock.now()
            self.pong.execute { self.hop(0, sentAt: sent) }
        }

        /// Hop `index` runs on `pong` when even, on `ping` when odd.
        private func hop(_ index: Int, sentAt: UInt64) {
            self.samples.record(Clock.now() &- sentAt, at: index)
            let next = index &+ 1
            if next == self.hops {
                self.done.countDown()
                return
            }
            let target = next.isMultiple(of: 2) ? self.pong : self.ping
            let sent = Clock.now()
            target.execute { self.hop(next, sentAt: sent) }
        }
    }
}
