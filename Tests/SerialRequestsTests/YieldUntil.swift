import Testing

/// Yields until `condition` holds; fails after 100,000 yields instead of hanging.
func yieldUntil(
    _ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool
) async throws {
    for _ in 0..<100_000 {
        if condition() { return }
        await Task.yield()
    }
    try #require(condition(), "\(what): still false after 100,000 yields", sourceLocation: sourceLocation)
}
