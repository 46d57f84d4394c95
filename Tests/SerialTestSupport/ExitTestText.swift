import Testing

extension ExitTest.Result {
    /// What the child process wrote to standard error, as text (for matching trap messages).
    public var standardErrorText: String {
        String(decoding: self.standardErrorContent, as: UTF8.self)
    }
}
