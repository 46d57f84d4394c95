/// Deterministic delays for timer rows, so every peer gets the same sequence.
enum Delays {
    /// `count` delays uniformly spread over `lower...upper` nanoseconds, in a fixed pseudo-random
    /// order (SplitMix64 from a fixed seed).
    static func uniform(_ count: Int, from lower: Int64, to upper: Int64, seed: UInt64 = 0x5E71A1) -> [Int64] {
        var state = seed
        let span = UInt64(upper - lower + 1)
        return (0..<count).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var mixed = state
            mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
            mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
            mixed ^= mixed >> 31
            return lower + Int64(mixed % span)
        }
    }

    static let second: Int64 = 1_000_000_000
}
