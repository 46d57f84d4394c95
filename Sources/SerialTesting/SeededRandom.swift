/// A small, fast generator whose whole sequence is fixed by its seed (SplitMix64): for tests
/// that must repeat exactly, such as a `Poller`'s backoff jitter or a seeded stress run whose
/// failure message prints the seed to run it again.
///
/// ```swift
/// var random = SeededRandom(seed: 42)
/// let delay = Int.random(in: 0..<100, using: &random)   // the same on every run with seed 42
/// ```
///
/// Not for anything that needs unpredictability: the next value follows from the last.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) {
        self.state = seed
    }

    /// The next value of the sequence.
    public mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
