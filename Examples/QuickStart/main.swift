// The README's complete example, kept here so CI compiles and runs it.
import ServiceGraph

struct AppConfig: Sendable { var greeting = "Hello" }
protocol Greeter: Sendable { func greet(_ name: String) -> String }
struct PoliteGreeter: Greeter {
    let config: AppConfig
    func greet(_ name: String) -> String { "\(config.greeting), \(name)." }
}
final class Audit: LifecycleHooks {
    func didAdd() async throws { print("audit started") }
    func willRemove() async throws { print("audit flushed") }
}
struct Welcome: Sendable {
    let greeter: any Greeter
    let audit: Audit
}

enum ConfigKey: ServiceKey { typealias Value = AppConfig }
enum GreeterKey: ServiceKey { typealias Value = any Greeter }
enum AuditKey: ServiceKey { typealias Value = Audit }
enum WelcomeKey: ServiceKey { typealias Value = Welcome }

var builder = ServiceGraph.Builder()
builder.provide(ConfigKey.self) { AppConfig() }  // a singleton by default
builder.provide(GreeterKey.self, dependsOn: ConfigKey.self) { PoliteGreeter(config: $0) }
builder.provide(AuditKey.self) {
    try await Task.sleep(for: .milliseconds(10))  // async, throwing factories
    return Audit()
}
builder.provide(WelcomeKey.self, lifetime: .transient, dependsOn: GreeterKey.self, AuditKey.self) {
    Welcome(greeter: $0, audit: $1)  // receives exactly its dependencies, typed
}

try builder.validate()  // checks the whole graph, runs no factory
let graph = try await builder.build()  // creates singletons in dependency order
print(graph[GreeterKey.self].greet("Ada"))  // a singleton: synchronous, non-optional
let welcome = try await graph.resolve(WelcomeKey.self)
print(welcome.greeter.greet("Grace"))
print(graph.dump(.text))  // the graph as a tree, with the initialization order
try await graph.shutdown()  // willRemove hooks in reverse order
