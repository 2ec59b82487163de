import ServiceGraph

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// A sign-up backend's composition root: validate, build, show the graph, serve a few requests in
// their own scopes, and shut down, printing the order in which lifecycle hooks ran.
//
//     swift run CompositionRoot                      # the whole story
//     swift run CompositionRoot --dump dot | dot -Tsvg > graph.svg
//
// `--dump text|dot|mermaid|json` prints only the built graph in that format.

let journal = Journal()
var builder = makeApplicationBuilder(journal: journal)

let arguments = CommandLine.arguments
if let flag = arguments.firstIndex(of: "--dump") {
    let formats: [String: DumpFormat] = ["text": .text, "dot": .dot, "mermaid": .mermaid, "json": .json]
    guard flag + 1 < arguments.count, let format = formats[arguments[flag + 1]] else {
        print("usage: CompositionRoot [--dump text|dot|mermaid|json]")
        exit(2)
    }
    exit(await printDump(format, of: builder))
}

/// Prints the built graph in `format`; for a broken graph, the error's picture of where it broke.
func printDump(_ format: DumpFormat, of builder: ServiceGraph.Builder) async -> Int32 {
    do {
        let graph = try await builder.build()
        print(graph.dump(format), terminator: "")
        try await graph.shutdown()
        return 0
    } catch {
        print(error.dump(format) ?? "\(error)", terminator: "")
        return 1
    }
}

do {
    builder.eventHandler = { event in
        if event.kind == .buildFinished { print("(built in \(event.duration ?? .zero))") }
    }
    for warning in builder.lint() {
        print(warning)
    }
    try builder.validate()
    // A live graph: the configuration can be reloaded while the backend runs (see the end).
    let live = try await LiveGraph(builder)
    let graph = live.current
    print(graph.dump(.text))
    print(graph.startupReport(slowest: 3))

    print("\nServing requests:")
    // The operator is known only at login: the session scope is seeded with them.
    let session = try graph.makeScope(
        .session,
        seeding: ScopeSeed(OperatorKey.self, Operator(email: "ops@example.com"))
    )
    let emails = ["ada@example.com", "grace@example.com", "ada@example.com", "bot@spam.example"]
    for (id, email) in emails.enumerated() {
        // The request is known only now: its scope, opened in the session, is seeded with it.
        let incoming = IncomingRequest(id: id + 1, email: email)
        let request = try session.makeScope(.request, seeding: ScopeSeed(IncomingRequestKey.self, incoming))
        let handler = try await request.resolve(SignupHandlerKey.self)
        let again = try await request.resolve(RequestContextKey.self)
        precondition(again === handler.context, "one RequestContext per request scope")
        let operatorSession = try await session.resolve(OperatorSessionKey.self)
        precondition(operatorSession === handler.session, "one OperatorSession per session scope")
        print("  " + handler.handle())
        try await request.close()
    }
    // Logout: the session's services go (a request still open would be closed first).
    try await session.close()

    // The admin console's first look creates the report (its didAdd runs now, not at startup).
    print("\nAdmin console: " + (try await graph[AdminConsoleKey.self].summary()))

    // SIGHUP: the log level is read again. Only what reads it, directly or not, is made again (the
    // logger and what logs); the store keeps its rows, the same instance. The old generation's
    // instances are released once nothing uses it (here, at shutdown: `graph` still holds it).
    let plan = try await live.update { $0.override(LogLevelKey.self) { "debug" } }
    print("\nLog level reloaded: \(plan)")
    let repository = try await live.current.resolve(UserRepositoryKey.self)
    repository.logger.log("logging at the reloaded level")
    print("Admin console: " + (try await live.current[AdminConsoleKey.self].summary()))

    try await live.shutdown()
    print("\nLifecycle hooks, in the order they ran:")
    for (index, entry) in journal.all.enumerated() {
        print("  \(index + 1). \(entry)")
    }
} catch {
    print("error: \(error)")
    exit(1)
}
