/// The choices a run made where more than one thread could run, packed as bits: choice `c` of
/// `n` options takes ⌈log₂ n⌉ bits, so two runnable threads cost one bit. A replay knows `n` at
/// each point (it rebuilds the same state), which is what makes the packing decodable.
///
/// `hash` (FNV-1a over every option count and choice) lets a replay prove it took the same path.
package struct ScheduleRecord: Hashable, Sendable {
    /// The packed choices, least significant bit first.
    package private(set) var bytes: [UInt8] = []
    package private(set) var bitCount = 0
    /// Points with at least two runnable threads.
    package private(set) var decisions = 0
    package private(set) var hash: UInt32 = 0x811C_9DC5

    package init() {}

    /// A record read back from a token.
    package init(bytes: [UInt8], bitCount: Int, decisions: Int, hash: UInt32) {
        self.bytes = bytes
        self.bitCount = bitCount
        self.decisions = decisions
        self.hash = hash
    }

    /// Bits a choice among `options` takes.
    @inline(__always)
    static func width(of options: Int) -> Int {
        Int.bitWidth - (options - 1).leadingZeroBitCount
    }

    /// Records `choice` among `options` (at least two).
    package mutating func append(choice: Int, of options: Int) {
        precondition(options >= 2 && (0..<options).contains(choice), "choice \(choice) of \(options)")
        for bit in 0..<Self.width(of: options) {
            if self.bitCount % 8 == 0 { self.bytes.append(0) }
            if (choice >> bit) & 1 == 1 { self.bytes[self.bitCount / 8] |= 1 << UInt8(self.bitCount % 8) }
            self.bitCount += 1
        }
        self.decisions += 1
        self.hash = Self.mix(self.hash, options: options, choice: choice)
    }

    static func mix(_ hash: UInt32, options: Int, choice: Int) -> UInt32 {
        var hash = hash
        for byte in [UInt8(truncatingIfNeeded: options), UInt8(truncatingIfNeeded: choice)] {
            hash = (hash ^ UInt32(byte)) &* 0x0100_0193
        }
        return hash
    }

    /// Reads the choices back in order.
    package struct Reader {
        private let record: ScheduleRecord
        private var position = 0
        package private(set) var decisions = 0
        package private(set) var hash: UInt32 = 0x811C_9DC5

        package init(_ record: ScheduleRecord) {
            self.record = record
        }

        /// The next recorded choice among `options`, or `nil` when the record has no more, or
        /// holds a choice that does not fit (the replay has left the recorded path).
        package mutating func next(of options: Int) -> Int? {
            let width = ScheduleRecord.width(of: options)
            guard self.decisions < self.record.decisions, self.position + width <= self.record.bitCount else {
                return nil
            }
            var choice = 0
            for bit in 0..<width {
                let at = self.position + bit
                if (self.record.bytes[at / 8] >> UInt8(at % 8)) & 1 == 1 { choice |= 1 << bit }
            }
            guard choice < options else { return nil }
            self.position += width
            self.decisions += 1
            self.hash = ScheduleRecord.mix(self.hash, options: options, choice: choice)
            return choice
        }

        /// Whether every recorded choice was read and the option counts matched the recording's.
        package var isComplete: Bool {
            self.decisions == self.record.decisions && self.hash == self.record.hash
        }
    }
}
