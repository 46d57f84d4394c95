import Foundation
import SerialPostgres

/// The fleet's sealing key in a file, `<key id>:<64 hex digits>`, readable by its owner only: how a
/// replica is given its key without putting it on a command line (which `ps` shows to everyone).
public enum FleetSealingKey {
    /// Writes `id` and `bytes` to a new file at `path`, mode 0600.
    public static func write(id: String, bytes: [UInt8], to path: String) throws {
        let text = id + ":" + bytes.map { String(format: "%02x", $0) }.joined() + "\n"
        guard FileManager.default.createFile(
            atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        else { throw LocalPostgresError.failed("write the sealing key", path) }
    }

    /// The key in the file at `path`.
    public static func read(_ path: String) throws -> CredentialSealing.Key {
        let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let fields = text.split(separator: ":")
        let hex = fields.count == 2 ? Array(fields[1].utf8) : []
        let bytes = stride(from: 0, to: hex.count - 1, by: 2).compactMap {
            UInt8(String(decoding: hex[$0...$0 + 1], as: UTF8.self), radix: 16)
        }
        guard fields.count == 2, bytes.count * 2 == hex.count else {
            throw LocalPostgresError.failed("read the sealing key", "\(path) does not hold <key id>:<hex>")
        }
        return try CredentialSealing.Key(id: String(fields[0]), bytes: bytes)
    }
}
