/// A `CallbackRecorder` wait ended before what it awaited arrived.
///
/// Thrown from a test, it fails the test with its description, which names the recorder, what
/// was awaited, the file and line of the wait, and the values that did arrive.
public struct RecorderTimeout: Error, CustomStringConvertible, Sendable {
    /// The whole message: recorder, awaited condition, place of the wait, values seen.
    public let description: String

    /// Creates a timeout error with the given message.
    public init(description: String) {
        self.description = description
    }
}
