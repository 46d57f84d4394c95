// The umbrella: `import SerialRuntime` brings every layer. Re-exports only.
@_exported import SerialCore
@_exported import SerialCountdown
@_exported import SerialPolling
@_exported import SerialRequests
@_exported import SerialTimers
