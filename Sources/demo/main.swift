import SerialRuntime

// `swift run demo` walks through the library, one scene per module.
print("swift-serial-runtime demo\n")
SerialQueueScene.run()
await PollingScene.run()
RequestsScene.run()
TimersScene.run()
await SerialCountdownScene.run()
