import SerialTestSupport
import SerialTesting
import SerialTimers
import Testing

/// Random insert / cancel / advance sequences checked step by step against a sorted array.
@Suite("TimingWheel against a reference model", .onItsOwnThread)  // CPU-bound for seconds: off the cooperative threads
struct TimingWheelPropertyTests {
    static let seeds: [UInt64] = [1, 2, 3, 42, 1_000, 0xC0FFEE, 0xDEAD_BEEF, 7_777_777]

    @Test(arguments: seeds)
    func randomOperationsMatchTheSortedArrayModel(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let start = UInt64.random(in: 0..<100_000, using: &random)
        var wheel = TimingWheel<Int>(currentTick: WheelTick(start))
        var model = SortedWheelModel(now: start)
        var handles: [Int: TimingWheel<Int>.Handle] = [:]
        var nextID = 0
        for step in 0..<3_000 {
            let context = Comment(rawValue: "seed \(seed), step \(step), wheel \(wheel)")
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5:
                // Distances spread over several levels, some in the past.
                let scale = [2, 64, 4_096, 262_144, 20_000_000][Int.random(in: 0..<5, using: &random)]
                let deadline = UInt64(max(0, Int(model.now) + Int.random(in: -3..<scale, using: &random)))
                let handle = wheel.insert(nextID, at: WheelTick(deadline))
                let due = model.file(id: nextID, due: deadline)
                #expect(wheel.deadline(of: handle)?.rawValue == due, context)
                handles[nextID] = handle
                nextID += 1
            case 5..<7:
                guard nextID > 0 else { continue }
                let id = Int.random(in: 0..<nextID, using: &random)  // may be gone already
                let removed = wheel.cancel(handles[id]!)
                #expect((removed != nil) == model.remove(id: id), context)
                if let removed { #expect(removed == id, context) }
            default:
                // Sometimes to the next expiry, sometimes a random jump.
                let target: UInt64
                if Bool.random(using: &random), let next = wheel.nextExpiry {
                    target = next.rawValue
                } else {
                    target = model.now + UInt64.random(in: 0..<[8, 500, 70_000][step % 3], using: &random)
                }
                #expect(wheel.advance(to: WheelTick(target)) == model.advance(to: target), context)
            }
            #expect(wheel.count == model.entries.count, context)
            if let next = wheel.nextExpiry, let earliest = model.entries.first?.due {
                #expect(next.rawValue <= earliest && next.rawValue > model.now, context)
                #expect(wheel.nextDeadline?.rawValue == earliest, context)
            } else {
                #expect(wheel.nextExpiry == nil && model.entries.isEmpty, context)
            }
        }
        wheel._checkInvariants()
        #expect(wheel.advance(to: WheelTick(model.now + 100_000_000)) == model.advance(to: model.now + 100_000_000))
    }
}
