import Glibc

/// The configuration of a stress run, from the environment:
/// `STRESS_SEED` (default: fresh each run) and `STRESS_SCALE` (iterations multiplier, default 1).
public enum StressConfiguration {
    /// The seed for this run: `STRESS_SEED` if set, otherwise drawn from the clock.
    public static func seed() -> UInt64 {
        if let text = getenv("STRESS_SEED"), let value = UInt64(String(cString: text)) { return value }
        return monotonicNow() ^ 0x5EED_0000_0000
    }

    /// `base` iterations scaled by `STRESS_SCALE` (so CI runs short and a soak runs long).
    public static func iterations(_ base: Int) -> Int {
        guard let text = getenv("STRESS_SCALE"), let scale = Double(String(cString: text)), scale > 0 else {
            return base
        }
        return max(1, Int(Double(base) * scale))
    }
}

/// Runs a stress scenario's blocking body on a thread of its own (see `offThePool`), at most
/// `StressBodies.limit` at once in the process.
///
/// Off the cooperative pool, nothing else bounds how many scenarios run together: all of them at
/// once oversubscribe two cores many times over, and under ThreadSanitizer their own bounded
/// waits (10 s for one poll's outcome) ran out. Two at a time is what the suite was sized for.
public func stressBody(_ body: @escaping @Sendable () -> Void) async {
    await offThePool {
        guard StressBodies.slots.wait(timeout: .seconds(3600)) else {
            fatalError("stressBody: no slot within an hour (a scenario never ended)")
        }
        defer { StressBodies.slots.signal() }
        body()
    }
}

/// The process-wide limit of `stressBody`.
public enum StressBodies {
    /// How many stress bodies run at once.
    public static let limit = 2
    static let slots = TestSemaphore(value: limit)
}
