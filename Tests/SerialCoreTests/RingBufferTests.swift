@testable import SerialCore
import SerialTesting
import SerialTestSupport
import Testing

@Suite("RingBuffer", .onItsOwnThread)  // CPU-bound for seconds: off the cooperative threads
struct RingBufferTests {
    /// An element whose instances are counted, so a move that copied, dropped or leaked one shows.
    final class Counted {
        static let live = LockedValue(0)
        let value: Int
        init(_ value: Int) {
            self.value = value
            Self.live.withLock { $0 += 1 }
        }
        deinit { Self.live.withLock { $0 -= 1 } }
    }

    /// `moveFirst(_:appendingTo:)` against two arrays, over random mixes of appends, pops and
    /// moves between rings of small capacities (so both rings wrap and grow).
    @Test func moveFirstMatchesAReferenceModel() {
        let seed: UInt64 = 0x51A6_2026
        var random = SeededRandom(seed: seed)
        let liveBefore = Counted.live.withLock { $0 }
        for trial in 0..<2_000 {
            var a = RingBuffer<Counted>(initialCapacity: Int.random(in: 1...8, using: &random))
            var b = RingBuffer<Counted>(initialCapacity: Int.random(in: 1...8, using: &random))
            var modelA: [Int] = []
            var modelB: [Int] = []
            var next = 0
            for _ in 0..<Int.random(in: 0...40, using: &random) {
                switch Int.random(in: 0..<5, using: &random) {
                case 0: a.append(Counted(next)); modelA.append(next); next += 1
                case 1: b.append(Counted(next)); modelB.append(next); next += 1
                case 2: if let element = a.popFirst() { #expect(element.value == modelA.removeFirst()) }
                case 3: if let element = b.popFirst() { #expect(element.value == modelB.removeFirst()) }
                default:
                    let count = Int.random(in: 0...10, using: &random)
                    a.moveFirst(count, appendingTo: &b)
                    let moved = min(count, modelA.count)
                    modelB += modelA.prefix(moved)
                    modelA.removeFirst(moved)
                }
                #expect(a.count == modelA.count && b.count == modelB.count, "seed \(seed), trial \(trial)")
            }
            var restA: [Int] = []
            while let element = a.popFirst() { restA.append(element.value) }
            var restB: [Int] = []
            while let element = b.popFirst() { restB.append(element.value) }
            #expect(restA == modelA && restB == modelB, "seed \(seed), trial \(trial)")
        }
        #expect(Counted.live.withLock { $0 } == liveBefore, "a move leaked or freed an element twice")
    }

    /// `insert(_:at:)` against an array, mixed with appends, prepends and pops from both ends,
    /// over small capacities (so the ring wraps and grows under the insertions).
    @Test func insertMatchesAReferenceModel() {
        let seed: UInt64 = 0x1A5E_2026
        var random = SeededRandom(seed: seed)
        for trial in 0..<2_000 {
            var ring = RingBuffer<Int>(initialCapacity: Int.random(in: 1...8, using: &random))
            var model: [Int] = []
            for next in 0..<Int.random(in: 0...40, using: &random) {
                switch Int.random(in: 0..<5, using: &random) {
                case 0: ring.append(next); model.append(next)
                case 1: ring.prepend(next); model.insert(next, at: 0)
                case 2: #expect(ring.popFirst() == model.first); if !model.isEmpty { model.removeFirst() }
                case 3: #expect(ring.popLast() == model.last); if !model.isEmpty { model.removeLast() }
                default:
                    let index = Int.random(in: 0...model.count, using: &random)
                    ring.insert(next, at: index)
                    model.insert(next, at: index)
                }
            }
            var rest: [Int] = []
            while let element = ring.popFirst() { rest.append(element) }
            #expect(rest == model, "seed \(seed), trial \(trial)")
        }
    }
}
