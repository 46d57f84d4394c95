/// A key naming a kind of request ("profile", "upload:42"): at most one request of a kind is in
/// flight at a time; others of the same kind wait in the queue (without holding back requests of
/// other kinds). A request submitted without a kind is never held back by this rule.
public struct RequestKind: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The key.
    public var name: String

    /// A kind named `name`.
    public init(_ name: String) {
        self.name = name
    }

    /// A kind named by a string literal: `kind: "profile"`.
    public init(stringLiteral value: String) {
        self.name = value
    }

    /// The kind's name.
    public var description: String { self.name }
}
