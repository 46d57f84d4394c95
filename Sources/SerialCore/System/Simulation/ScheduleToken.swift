/// One line that names a simulated run and replays it: the strategy, the seed, and every
/// choice the run made.
///
/// Form: `sim1:STRATEGY:SEED:DECISIONS:HASH:BITS`, for example `sim1:pct3:42:187:9f3a01c2:Kq0-…`:
/// `HASH` is the record's FNV-1a (8 hex digits), `BITS` the packed choices in base64url
/// without padding. Replaying follows `BITS`, not the seed: the strategy and seed are there for
/// people, and to run the same strategy again past the recorded end.
package struct ScheduleToken: Hashable, Sendable, CustomStringConvertible {
    package let strategy: ScheduleStrategy
    package let seed: UInt64
    package let record: ScheduleRecord

    package init(strategy: ScheduleStrategy, seed: UInt64, record: ScheduleRecord) {
        self.strategy = strategy
        self.seed = seed
        self.record = record
    }

    package var description: String {
        let hash = String(self.record.hash, radix: 16)
        let paddedHash = String(repeating: "0", count: 8 - hash.count) + hash
        return "sim1:\(self.strategy.name):\(self.seed):\(self.record.decisions):\(paddedHash):"
            + Base64URL.encode(self.record.bytes)
    }

    /// Parses a token's text (surrounding spaces ignored); `nil` if it is not one.
    package init?(parsing text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map {
            String($0).trimmingSpaces
        }
        guard parts.count == 6, parts[0] == "sim1",
            let strategy = ScheduleStrategy(name: parts[1]),
            let seed = UInt64(parts[2]),
            let decisions = Int(parts[3]), decisions >= 0,
            parts[4].utf8.count == 8, let hash = UInt32(parts[4], radix: 16),
            let bytes = Base64URL.decode(parts[5])
        else { return nil }
        // The bit count is not stored: the reader stops at `decisions`; trailing bits are zero.
        self.init(
            strategy: strategy, seed: seed,
            record: ScheduleRecord(bytes: bytes, bitCount: bytes.count * 8, decisions: decisions, hash: hash))
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        String(self.drop { $0 == " " || $0 == "\n" }.reversed().drop { $0 == " " || $0 == "\n" }.reversed())
    }
}

/// base64url (RFC 4648 §5) without padding: a token stays one shell word.
enum Base64URL {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value: UInt32 = 0
            for (offset, byte) in chunk.enumerated() { value |= UInt32(byte) << (16 - 8 * UInt32(offset)) }
            for position in 0...chunk.count {
                out.append(Self.alphabet[Int((value >> (18 - 6 * UInt32(position))) & 63)])
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        for character in text.utf8 {
            guard let value = Self.alphabet.firstIndex(of: character) else { return nil }
            values.append(UInt8(value))
        }
        guard values.count % 4 != 1 else { return nil }
        var bytes: [UInt8] = []
        var index = 0
        while index < values.count {
            let group = values[index..<min(index + 4, values.count)]
            var value: UInt32 = 0
            for (offset, sextet) in group.enumerated() { value |= UInt32(sextet) << (18 - 6 * UInt32(offset)) }
            for position in 0..<(group.count - 1) { bytes.append(UInt8((value >> (16 - 8 * UInt32(position))) & 0xFF)) }
            index += 4
        }
        return bytes
    }
}
