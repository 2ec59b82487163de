import ServiceGraph
import Testing
import ServiceGraphTestSupport

private enum K0: ServiceKey { typealias Value = Int }
private enum K1: ServiceKey { typealias Value = Int }
private enum K2: ServiceKey { typealias Value = Int }
private enum K3: ServiceKey { typealias Value = Int }
private enum K4: ServiceKey { typealias Value = Int }
private enum K5: ServiceKey { typealias Value = Int }
private enum K6: ServiceKey { typealias Value = Int }
private enum K7: ServiceKey { typealias Value = Int }
private enum K8: ServiceKey { typealias Value = Int }
private enum Sum: ServiceKey { typealias Value = [Int] }
private enum Label: ServiceKey { typealias Value = String }
private enum Pair: ServiceKey { typealias Value = (Int, String) }

private struct Greeter: Injectable {
    typealias Dependencies = Needs<Label, K1>
    let text: String

    init(dependencies: (String, Int)) {
        text = "\(dependencies.0) x\(dependencies.1)"
    }
}

private struct Lonely: Injectable {
    let made = true

    init(dependencies: ()) {}
}

private struct Echo: Injectable {
    typealias Dependencies = Needs<Label>
    let text: String

    init(dependencies label: String) {
        text = label
    }
}

private enum SecondGreeter: ServiceKey { typealias Value = Greeter }

@Suite("Providers")
struct ProviderTests {
    @Test func factoryWithNoDependenciesIsCalledWithNothing() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(K0.self) { 42 }
        let graph = try await builder.build()
        #expect(graph[K0.self] == 42)
    }

    @Test func factoryReceivesEightDependenciesTypedAndInDeclarationOrder() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(K1.self) { 1 }
        builder.provide(K2.self) { 2 }
        builder.provide(K3.self) { 3 }
        builder.provide(K4.self) { 4 }
        builder.provide(K5.self) { 5 }
        builder.provide(K6.self) { 6 }
        builder.provide(K7.self) { 7 }
        builder.provide(K8.self) { 8 }
        builder.provide(
            Sum.self,
            dependsOn: K8.self,
            K7.self,
            K6.self,
            K5.self,
            K4.self,
            K3.self,
            K2.self,
            K1.self
        ) { a, b, c, d, e, f, g, h in
            [a, b, c, d, e, f, g, h]
        }
        let graph = try await builder.build()
        #expect(graph[Sum.self] == [8, 7, 6, 5, 4, 3, 2, 1])
    }

    @Test func dependenciesOfDifferentTypesArriveTyped() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(K1.self) { 7 }
        builder.provide(Label.self) { "seven" }
        builder.provide(Pair.self, dependsOn: K1.self, Label.self) { number, name in (number, name) }
        let graph = try await builder.build()
        #expect(graph[Pair.self] == (7, "seven"))
    }

    @Test func asyncThrowingFactoriesAreAwaited() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(K1.self) {
            try await Task.sleep(for: .milliseconds(1))
            return 11
        }
        builder.provide(K2.self, dependsOn: K1.self) { value in
            await Task.yield()
            return value * 2
        }
        let graph = try await builder.build()
        #expect(graph[K2.self] == 22)
    }

    @Test func serviceProvidesItselfFromItsDeclaredDependencies() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(Label.self) { "hello" }
        builder.provide(K1.self) { 3 }
        builder.provide(Greeter.self)
        builder.provide(Lonely.self)
        builder.provide(Echo.self, lifetime: .transient)
        let graph = try await builder.build()
        #expect(graph[Greeter.self].text == "hello x3")
        #expect(graph[Lonely.self].made)
        #expect(try graph.resolveSynchronously(Echo.self).text == "hello")
    }

    @Test func serviceCanBeProvidedUnderAnotherKey() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(Label.self) { "hi" }
        builder.provide(K1.self) { 2 }
        builder.provide(SecondGreeter.self, using: Greeter.self)
        let graph = try await builder.build()
        #expect(graph[SecondGreeter.self].text == "hi x2")
    }

    @Test func serviceDependenciesAreValidatedLikeClosures() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(Greeter.self)
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.problems.map(\.code) == [.missingProvider, .missingProvider])
        #expect(error.problems.map(\.key) == ["Label", "K1"])
    }

    @Test func builderIsAValueSoCopiesAreIndependent() async throws {
        var original = ServiceGraph.Builder()
        original.provide(K1.self) { 1 }
        var copy = original
        copy.provide(K2.self) { 2 }
        let copied = try await copy.build()
        #expect(copied[K2.self] == 2)
        try await copied.shutdown()
        let graph = try await original.build()
        #expect(throws: ServiceGraphError.self) { try graph.resolveSynchronously(K2.self) }
    }

    @Test func keysWithTheSameValueTypeAreDistinct() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(IntKey.self) { 1 }
        builder.provide(OtherIntKey.self) { 2 }
        let graph = try await builder.build()
        #expect(graph[IntKey.self] == 1)
        #expect(graph[OtherIntKey.self] == 2)
    }
}
