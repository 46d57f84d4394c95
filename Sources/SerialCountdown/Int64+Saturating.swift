/// Nanosecond arithmetic that saturates at the ends of `Int64` instead of wrapping: where a
/// duration meets a clock, "very far" must stay very far, and "long ago" long ago.
extension Int64 {
    /// `self + other`, clamped to `Int64`'s range.
    @inline(__always)
    func saturatingAdding(_ other: Int64) -> Int64 {
        let (sum, overflow) = self.addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    /// `self - other`, clamped to `Int64`'s range.
    @inline(__always)
    func saturatingSubtracting(_ other: Int64) -> Int64 {
        let (difference, overflow) = self.subtractingReportingOverflow(other)
        return overflow ? (other < 0 ? .max : .min) : difference
    }

    /// `self * other`, clamped to `Int64`'s range.
    @inline(__always)
    func saturatingMultiplied(by other: Int64) -> Int64 {
        let (product, overflow) = self.multipliedReportingOverflow(by: other)
        return overflow ? ((self < 0) == (other < 0) ? .max : .min) : product
    }
}
