#if Postgres  // compiled only with the package trait Postgres (see Package.swift)
import Crypto

/// Authenticated encryption (AES-256-GCM) of the credential a `PostgresCredentialCoordinator`
/// stores, so that its row holds nothing usable to whoever can read the table.
///
/// ```swift
/// let sealing = try CredentialSealing(
///     sealingWith: .init(id: "2026-11", bytes: currentKey),      // 32 bytes, from your secret store
///     alsoOpening: [.init(id: "2026-10", bytes: previousKey)])    // rows sealed before the rotation
/// let coordinator = try await PostgresCredentialCoordinator<String>.connect(
///     configuration, initial: "t0", codec: .string.sealed(with: sealing))
/// ```
///
/// **The row.** The credential column holds `sealed:v1:<key id>:<hex of nonce, ciphertext, tag>`:
/// the key's id in clear beside the ciphertext, so that a reader picks the key and an operator
/// sees which key a row needs. A fresh random nonce per seal. The authenticated data binds the
/// ciphertext to the table, the credential's name and its generation: a row copied from another
/// credential, or an older sealed value written back over a newer generation, is refused.
///
/// **Refusals.** A row sealed with a key this coordinator lacks is refused with
/// `PostgresCoordinatorError.sealedWithUnknownKey`, and so is a sealed row read by a coordinator
/// whose codec does not seal (it lacks every key; it never takes the ciphertext for the
/// credential); a row that fails authentication (changed,
/// copied, or not sealed at all) with `.unsealable`. Rows are opened only when read (`current()`,
/// and `acquire` answering a newer generation), never while this replica holds a lease, so a
/// refusal costs no lease: the call fails, nothing is written, and the lease protocol goes on as
/// before. A replica that already holds the row's generation can still take the lease and
/// publish a freshly sealed credential over the refused row.
///
/// **Rotation.** Give every replica the new key in `alsoOpening` first; then make it the sealing
/// key everywhere (the next publish seals with it); retire the old key once no row needs it.
public struct CredentialSealing: Sendable {
    /// An AES-256 key and the id stored beside what it seals.
    public struct Key: Sendable {
        /// The key's name in sealed rows: 1 to 64 ASCII letters, digits, `-`, `_` or `.`.
        public let id: String
        let key: SymmetricKey

        /// A key of 32 bytes (AES-256) named `id`.
        ///
        /// - Throws: `PostgresCoordinatorError.invalidSealingKey` for another length or an unusable id.
        public init(id: String, bytes: [UInt8]) throws(PostgresCoordinatorError) {
            let usable = (1...64).contains(id.utf8.count)
                && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }
            guard usable else { throw .invalidSealingKey(id: id, reason: "an id is 1 to 64 of A-Z a-z 0-9 - _ .") }
            guard bytes.count == 32 else {
                throw .invalidSealingKey(id: id, reason: "\(bytes.count) bytes; AES-256 takes 32")
            }
            self.id = id
            self.key = SymmetricKey(data: bytes)
        }
    }

    /// The key new credentials are sealed with.
    public let sealingKey: Key
    /// Every key rows may be opened with, by id (the sealing key among them).
    let openingKeys: [String: Key]

    /// Seals with `key`; opens rows sealed with it or with any of `alsoOpening`.
    ///
    /// - Throws: `PostgresCoordinatorError.invalidSealingKey` when two keys share an id.
    public init(sealingWith key: Key, alsoOpening older: [Key] = []) throws(PostgresCoordinatorError) {
        var keys = [key.id: key]
        for other in older {
            guard keys.updateValue(other, forKey: other.id) == nil else {
                throw .invalidSealingKey(id: other.id, reason: "two keys have this id")
            }
        }
        self.sealingKey = key
        self.openingKeys = keys
    }

    static let prefix = "sealed:v1:"

    /// `plain` sealed for `row`, as stored.
    func seal(_ plain: String, for row: RowIdentity) throws(PostgresCoordinatorError) -> String {
        let key = self.sealingKey
        do {
            let box = try AES.GCM.seal(Array(plain.utf8), using: key.key, authenticating: row.authenticatedData(key.id))
            guard let combined = box.combined else { throw CryptoKitError.incorrectParameterSize }
            return Self.prefix + key.id + ":" + Hex.encode(Array(combined))
        } catch {
            throw .unsealable(name: row.name, reason: "sealing failed: \(error)")  // not expected with a valid key
        }
    }

    /// The plain text of `stored`, if it is authentic for `row` under one of the opening keys.
    func open(_ stored: String, for row: RowIdentity) throws(PostgresCoordinatorError) -> String {
        guard stored.hasPrefix(Self.prefix) else {
            throw .unsealable(
                name: row.name,
                reason: "it is not sealed, and this coordinator's codec seals (written by a coordinator "
                    + "without sealing, or by someone else); delete the row to start again from `initial`")
        }
        let fields = stored.dropFirst(Self.prefix.count).split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 2 else { throw .unsealable(name: row.name, reason: "not a sealed value (its fields)") }
        let keyID = String(fields[0])
        guard let key = self.openingKeys[keyID] else {
            throw .sealedWithUnknownKey(name: row.name, keyID: keyID, known: self.openingKeys.keys.sorted())
        }
        do {
            guard let combined = Hex.decode(fields[1]) else { throw CryptoKitError.incorrectParameterSize }
            let box = try AES.GCM.SealedBox(combined: combined)
            let plain = try AES.GCM.open(box, using: key.key, authenticating: row.authenticatedData(keyID))
            return String(decoding: Array(plain), as: UTF8.self)
        } catch {
            throw .unsealable(
                name: row.name,
                reason: "authentication failed under key \"\(keyID)\": the row was changed, or its value belongs "
                    + "to another credential or generation (the row says generation \(row.generation))")
        }
    }
}

/// Where a stored credential belongs: what its seal is bound to.
struct RowIdentity: Sendable {
    var table: String
    var name: String
    var generation: UInt64

    /// The bytes AES-GCM authenticates beside the ciphertext (not stored: both sides know them).
    func authenticatedData(_ keyID: String) -> [UInt8] {
        Array("serial-postgres credential v1\0\(self.table)\0\(self.name)\0\(self.generation)\0\(keyID)".utf8)
    }
}

extension CredentialTable {
    /// This table's row of the credential at `generation`.
    func row(generation: UInt64) -> RowIdentity {
        RowIdentity(table: self.name, name: self.credential, generation: generation)
    }
}

extension PostgresCredentialCoordinator.Codec {
    /// This codec with its text sealed by `sealing` before it is stored, and opened (or refused)
    /// when read: see `CredentialSealing`.
    public func sealed(with sealing: CredentialSealing) -> Self {
        var codec = self
        codec.sealing = sealing
        return codec
    }

    /// `credential` as stored in `row`: the codec's text, sealed if the codec seals.
    func stored(_ credential: Credential, in row: RowIdentity) throws(PostgresCoordinatorError) -> String {
        let text = self.encode(credential)
        guard let sealing = self.sealing else { return text }
        return try sealing.seal(text, for: row)
    }

    /// The credential stored in `row` as `stored`: opened if the codec seals, then decoded. A
    /// codec that does not seal lacks every key: a sealed row is refused, not decoded as the
    /// credential (its ciphertext would go out as a bearer token).
    func credential(from stored: String, in row: RowIdentity) throws(PostgresCoordinatorError) -> Credential {
        guard let sealing = self.sealing else {
            if stored.hasPrefix(CredentialSealing.prefix) {
                let keyID = stored.dropFirst(CredentialSealing.prefix.count).prefix { $0 != ":" }
                throw .sealedWithUnknownKey(name: row.name, keyID: String(keyID), known: [])
            }
            return try self.decoded(stored, in: row)
        }
        return try self.decoded(try sealing.open(stored, for: row), in: row)
    }

    private func decoded(_ text: String, in row: RowIdentity) throws(PostgresCoordinatorError) -> Credential {
        do {
            return try self.decode(text)
        } catch {
            throw .undecodableCredential(name: row.name, reason: "\(error)")
        }
    }
}

/// Lowercase hexadecimal, without Foundation.
enum Hex {
    static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes { text += [digits[Int(byte >> 4)], digits[Int(byte & 0xf)]] }
        return String(decoding: text, as: UTF8.self)
    }

    static func decode(_ text: Substring) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            default: return nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        for index in stride(from: 0, to: utf8.count, by: 2) {
            guard let high = value(utf8[index]), let low = value(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }
}
#endif  // Postgres
