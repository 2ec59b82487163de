import ServiceGraph
import Testing
import ServiceGraphTestSupport

/// Compile-time checks: these only build if the public types are `Sendable`.
@Suite("Sendable conformances")
struct SendableTests {
    private func requireSendable<T: Sendable>(_: T.Type) {}

    @Test func publicTypesAreSendable() {
        requireSendable(ServiceGraph.self)
        requireSendable(ServiceGraph.Builder.self)
        requireSendable(ServiceScope.self)
        requireSendable(ServiceGraphError.self)
        requireSendable(ServiceGraphError.Problem.self)
        requireSendable(ServiceGraphError.Code.self)
        requireSendable(Lifetime.self)
        requireSendable(RegistrationSite.self)
        requireSendable(DumpFormat.self)
    }

    @Test func aBuiltGraphCrossesTaskBoundaries() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(IntKey.self) { 3 }
        let graph = try await builder.build()
        let value = await Task.detached { graph[IntKey.self] }.value
        #expect(value == 3)
    }
}
