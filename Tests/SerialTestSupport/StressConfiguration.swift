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
