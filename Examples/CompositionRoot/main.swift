import ServiceGraph

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// A sign-up backend's composition root: validate, build, show the graph, serve a few requests in
// their own scopes, and shut down, printing the order in which lifecycle hooks ran.

let journal = Journal()
let builder = makeApplicationBuilder(journal: journal)

do {
    try builder.validate()
    let graph = try await builder.build()
    print(graph.dump(.text))

    print("Serving requests:")
    for email in ["ada@example.com", "grace@example.com", "ada@example.com"] {
        let request = try graph.makeScope()
        let handler = try await request.resolve(SignupHandlerKey.self)
        let again = try await request.resolve(RequestContextKey.self)
        precondition(again === handler.context, "one RequestContext per request scope")
        print("  " + handler.handle(email: email))
        try await request.close()
    }

    try await graph.shutdown()
    print("\nLifecycle hooks, in the order they ran:")
    for (index, entry) in journal.all.enumerated() {
        print("  \(index + 1). \(entry)")
    }
} catch {
    print("error: \(error)")
    exit(1)
}
