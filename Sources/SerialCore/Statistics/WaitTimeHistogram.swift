/// Durations counted in fixed power-of-two buckets: O(1) to record, a few hundred bytes, and a
/// percentile accurate to a factor of two — enough to tell 10 µs from 10 ms.
///
/// The buckets are allocated at the second recorded duration: until then the longest duration
/// is the only one, and its bucket is known. A pooled queue keeps one of these, and most of
/// 100k idle queues have run once or never.
///
/// Bucket 0 holds durations under 1 µs; bucket `i` (1 ≤ i < 31) holds [2^(i−1), 2^i) µs; the
/// last bucket holds everything from about 17.9 minutes up.
public struct WaitTimeHistogram: Sendable, Hashable {
    /// The number of buckets.
    public static let bucketCount = 32

    /// How many durations were recorded.
    public private(set) var count: Int = 0
    /// Their sum, in nanoseconds (saturating).
    public private(set) var totalNanoseconds: UInt64 = 0
    /// The longest recorded, in nanoseconds.
    public private(set) var maximumNanoseconds: UInt64 = 0
    /// `buckets[i]`: how many durations fell in bucket `i` (see the type's summary).
    public var buckets: [Int] {
        if !self.storedBuckets.isEmpty { return self.storedBuckets }
        var buckets = Array(repeating: 0, count: Self.bucketCount)
        if self.count == 1 { buckets[Self.bucket(forNanoseconds: self.maximumNanoseconds)] = 1 }
        return buckets
    }
    /// The buckets, once two or more durations were recorded; empty before. A function of
    /// `count` and the durations, so the synthesized equality stays exact.
    private var storedBuckets: [Int] = []

    /// An empty histogram.
    public init() {}

    /// The sum of the recorded durations.
    public var total: Duration { .nanoseconds(Int64(clamping: self.totalNanoseconds)) }

    /// The longest recorded duration.
    public var maximum: Duration { .nanoseconds(Int64(clamping: self.maximumNanoseconds)) }

    /// Records one duration of `nanoseconds`.
    ///
    /// - Complexity: O(1); the second duration recorded allocates the buckets, once.
    public mutating func record(nanoseconds: UInt64) {
        if self.count == 1 {
            self.storedBuckets = Array(repeating: 0, count: Self.bucketCount)
            self.storedBuckets[Self.bucket(forNanoseconds: self.maximumNanoseconds)] = 1
        }
        self.count += 1
        let (sum, overflow) = self.totalNanoseconds.addingReportingOverflow(nanoseconds)
        self.totalNanoseconds = overflow ? .max : sum
        self.maximumNanoseconds = max(self.maximumNanoseconds, nanoseconds)
        if self.count > 1 { self.storedBuckets[Self.bucket(forNanoseconds: nanoseconds)] += 1 }
    }

    /// The bucket a duration of `nanoseconds` falls in.
    public static func bucket(forNanoseconds nanoseconds: UInt64) -> Int {
        let microseconds = nanoseconds / 1_000
        guard microseconds > 0 else { return 0 }
        return min(Self.bucketCount - 1, UInt64.bitWidth - microseconds.leadingZeroBitCount)
    }

    /// The exclusive upper bound of bucket `index` (`nil` for the last, unbounded one).
    public static func upperBound(ofBucket index: Int) -> Duration? {
        guard index < Self.bucketCount - 1 else { return nil }
        return .microseconds(Int64(1) << index)
    }

    /// A duration at least as long as the `fraction` (0…1) quantile of what was recorded: the
    /// upper bound of the bucket holding it, capped at the maximum. `.zero` when empty.
    public func percentile(_ fraction: Double) -> Duration {
        guard self.count > 0 else { return .zero }
        let rank = max(1, Int((fraction * Double(self.count)).rounded(.up)))
        var seen = 0
        for (index, inBucket) in self.buckets.enumerated() {
            seen += inBucket
            if seen >= rank {
                let bound = Self.upperBound(ofBucket: index) ?? self.maximum
                return min(bound, self.maximum)
            }
        }
        return self.maximum
    }

    /// The 99th percentile (see `percentile(_:)`).
    public var p99: Duration { self.percentile(0.99) }
}
