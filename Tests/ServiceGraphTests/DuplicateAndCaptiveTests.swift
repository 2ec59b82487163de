import ServiceGraph
import Testing

private enum Logger: ServiceKey { typealias Value = String }
private enum Session: ServiceKey { typealias Value = Int }
private enum Request: ServiceKey { typealias Value = Int }
private enum Cache: ServiceKey { typealias Value = Int }
private enum App: ServiceKey { typealias Value = Int }

@Suite("Duplicate providers and captive dependencies")
struct DuplicateAndCaptiveTests {
    @Test func duplicateProviderNamesBothRegistrationSites() throws {
        var builder = ServiceGraph.Builder()
        let first = #line + 1
        builder.provide(Logger.self) { "one" }
        let second = #line + 1
        builder.provide(Logger.self) { "two" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.problems.count == 1)
        let problem = error.problems[0]
        #expect(problem.code == .duplicateProvider)
        #expect(problem.message.contains("Logger is provided twice"))
        #expect(problem.message.contains("DuplicateAndCaptiveTests.swift:\(first)"))
        #expect(problem.message.contains("DuplicateAndCaptiveTests.swift:\(second)"))
        #expect(problem.site?.line == second)
    }

    @Test(arguments: [
        (Lifetime.singleton, Lifetime.scoped),
        (Lifetime.singleton, Lifetime.transient),
    ])
    func aSingletonMayNotCaptureAScopedOrTransientService(holder: Lifetime, captive: Lifetime) throws {
        var builder = ServiceGraph.Builder()
        builder.provide(Request.self, lifetime: captive) { 1 }
        let line = #line + 1
        builder.provide(Cache.self, lifetime: holder, dependsOn: Request.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.problems.count == 1)
        let problem = error.problems[0]
        #expect(problem.code == .captiveDependency)
        #expect(problem.key == "Cache")
        #expect(problem.path == ["Cache", "Request"])
        #expect(problem.message.contains("Cache (\(holder)) depends on Request (\(captive))"))
        #expect(problem.site?.line == line)
    }

    @Test(arguments: [
        (Lifetime.scoped, Lifetime.singleton),
        (Lifetime.transient, Lifetime.singleton),
        (Lifetime.transient, Lifetime.scoped),
        (Lifetime.scoped, Lifetime.scoped),
        (Lifetime.transient, Lifetime.transient),
        (Lifetime.scoped, Lifetime.transient),
    ])
    func dependenciesThatCannotOutliveTheirHolderAreFine(holder: Lifetime, dependency: Lifetime) throws {
        var builder = ServiceGraph.Builder()
        builder.provide(Request.self, lifetime: dependency) { 1 }
        builder.provide(Cache.self, lifetime: holder, dependsOn: Request.self) { $0 }
        try builder.validate()
    }
}
