/// The reference both wheel property tests check against: entries sorted by (due tick, filing
/// number), so what expires at one tick comes out in the order it was filed.
struct SortedWheelModel {
    var now: UInt64
    var entries: [(due: UInt64, id: Int)] = []

    init(now: UInt64) {
        self.now = now
    }

    /// Files `id` at `tick`, or at the next tick when `tick` has passed; returns where it went.
    @discardableResult
    mutating func file(id: Int, due tick: UInt64) -> UInt64 {
        let due = max(tick, self.now + 1)
        let index = self.entries.firstIndex { $0.due > due } ?? self.entries.count
        self.entries.insert((due, id), at: index)
        return due
    }

    mutating func remove(id: Int) -> Bool {
        guard let index = self.entries.firstIndex(where: { $0.id == id }) else { return false }
        self.entries.remove(at: index)
        return true
    }

    /// Moves to `tick` and returns what expired, in order.
    mutating func advance(to tick: UInt64) -> [Int] {
        guard tick > self.now else { return [] }
        self.now = tick
        let due = self.entries.prefix { $0.due <= tick }
        self.entries.removeFirst(due.count)
        return due.map(\.id)
    }
}
