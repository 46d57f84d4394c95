/// Order statistics over measured samples.
enum Statistics {
    /// The median; for an even count, the mean of the two middle values.
    static func median(_ values: [Double]) -> Double {
        precondition(!values.isEmpty, "median of no samples")
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// The `fraction` percentile (0...1) by nearest rank over already sorted samples.
    static func percentile(_ fraction: Double, sorted: UnsafeBufferPointer<UInt64>) -> Double {
        precondition(!sorted.isEmpty, "percentile of no samples")
        let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
        return Double(sorted[min(max(rank, 0), sorted.count - 1)])
    }
}

/// A fixed-size buffer of samples written from peers' threads at distinct indices, read after
/// a latch or join (which orders the writes before the reads).
final class Samples: @unchecked Sendable {  // each index is written by one thread, read after a synchronising wait
    let pointer: UnsafeMutableBufferPointer<UInt64>

    init(count: Int) {
        self.pointer = .allocate(capacity: count)
        self.pointer.initialize(repeating: 0)
    }

    deinit { self.pointer.deallocate() }

    @inline(__always)
    func record(_ value: UInt64, at index: Int) { self.pointer[index] = value }

    /// Sorts in place and returns the given percentiles.
    func percentiles(_ fractions: [Double]) -> [Double] {
        var buffer = self.pointer
        buffer.sort()
        return fractions.map { Statistics.percentile($0, sorted: UnsafeBufferPointer(buffer)) }
    }
}
