import ServiceGraph
import Testing

private enum Present: ServiceKey { typealias Value = Int }
private enum Absent: ServiceKey { typealias Value = Int }
private enum Fresh: ServiceKey { typealias Value = Int }
private enum PerRequest: ServiceKey { typealias Value = Int }

/// The subscript's traps say what went wrong, in every build: `-O` drops the message of a
/// `preconditionFailure`, so these also run in release (`swift test -c release -Xswiftc -enable-testing`).
@Suite("Trap messages")
struct TrapMessageTests {
    /// A graph with one service of each lifetime.
    static func graph() async throws -> ServiceGraph {
        var builder = ServiceGraph.Builder()
        builder.provide(Present.self) { 1 }
        builder.provide(Fresh.self, lifetime: .transient) { 2 }
        builder.provide(PerRequest.self, lifetime: .scoped) { 3 }
        return try await builder.build()
    }

    @Test func readingAMissingKeyDiesNamingTheKeyAndTheClosestOnes() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let graph = try await TrapMessageTests.graph()
            _ = graph[Absent.self]
        }
        let message = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(message.contains("Absent is not in this graph; closest keys: "), "\(message)")
    }

    @Test func readingATransientKeyDiesNamingItsLifetime() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let graph = try await TrapMessageTests.graph()
            _ = graph[Fresh.self]
        }
        let message = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(message.contains("ServiceGraph: Fresh is transient, not a singleton; use `resolve`"), "\(message)")
    }

    @Test func readingAScopedKeyDiesNamingItsLifetime() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let graph = try await TrapMessageTests.graph()
            _ = graph[PerRequest.self]
        }
        let message = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(message.contains("ServiceGraph: PerRequest is scoped, not a singleton; use `resolve`"), "\(message)")
    }
}
