import FleetSupport
import Foundation

// One replica of the fleet (started by the fleet test or fleet-demo): see FleetWorker.
exit(await FleetWorker.main(FleetWorkerOptions(arguments: Array(CommandLine.arguments.dropFirst()))))
