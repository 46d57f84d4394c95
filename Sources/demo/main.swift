import SerialRuntime

// `swift run demo` walks through the library, one scene per module, lowest layer first.
print("swift-serial-runtime demo\n")
SerialQueueScene.run()
StallScene.run()
WorkerPoolScene.run()
TimersScene.run()
HeartbeatScene.run()
await SerialCountdownScene.run()
await PollingScene.run()
RequestsScene.run()
