import Logging
import SignupApp

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The sign-up server: `swift run SignupServer --database /tmp/signups.sqlite --port 8080`.
LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
let logger = Logger(label: "signup-server")
do {
    let configuration = try AppConfiguration(arguments: CommandLine.arguments.dropFirst())
    try await SignupServerApp.run(configuration: configuration, logger: logger)
    logger.info("exiting")
} catch {
    logger.critical("\(error)")
    exit(1)
}
