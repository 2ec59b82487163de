import Foundation
import ServiceGraph
import Testing
import ServiceGraphTestSupport

private struct UserID: Sendable, Hashable { let raw: Int }

/// The thread running the caller (a synchronous function: `Thread.current` is not read from async code).
private func currentThread() -> ObjectIdentifier { ObjectIdentifier(Thread.current) }

private final class Repository: Sendable {
    let name: String
    init(name: String) { self.name = name }
}

private final class Profile: Sendable {
    let id: UserID
    let repository: Repository
    let tab: String
    init(id: UserID, repository: Repository, tab: String = "main") {
        self.id = id
        self.repository = repository
        self.tab = tab
    }
}

private struct ProfileScreens: Sendable {
    let makeProfile: ArgumentFactory<ProfileKey, UserID>.Value
}

private enum RepositoryKey: ServiceKey { typealias Value = Repository }
private enum ProfileKey: ServiceKey { typealias Value = Profile }
private enum TabbedProfileKey: ServiceKey { typealias Value = Profile }
private enum ScreensKey: ServiceKey { typealias Value = ProfileScreens }
private enum RequestKey: ServiceKey { typealias Value = String }
private enum GreetingKey: ServiceKey { typealias Value = String }

@Suite("Factories with arguments")
struct ArgumentFactoryTests {
    private func builder(made: Tally = Tally()) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        builder.provide(RepositoryKey.self) { Repository(name: "main") }
        builder.provide(ProfileKey.self, arguments: UserID.self, dependsOn: RepositoryKey.self) { id, repository in
            made.increment()
            return Profile(id: id, repository: repository)
        }
        builder.provide(
            TabbedProfileKey.self,
            arguments: UserID.self,
            String.self,
            Int.self,
            dependsOn: RepositoryKey.self
        ) {
            id,
            tab,
            badge,
            repository in
            await Task.yield()
            return Profile(id: id, repository: repository, tab: "\(tab)#\(badge)")
        }
        builder.provide(ScreensKey.self, dependsOn: ArgumentFactory<ProfileKey, UserID>.self) { makeProfile in
            ProfileScreens(makeProfile: makeProfile)
        }
        return builder
    }

    @Test func aSingletonHoldsTheFunctionAndEachCallMakesANewValue() async throws {
        let made = Tally()
        let graph = try await builder(made: made).build()
        #expect(made.count == 0, "the function is made, not a profile")
        let screens = graph[ScreensKey.self]
        let ada = try await screens.makeProfile(UserID(raw: 1))
        let bob = try await screens.makeProfile(UserID(raw: 2))
        #expect(ada.id.raw == 1 && bob.id.raw == 2 && ada !== bob)
        #expect(ada.repository === graph[RepositoryKey.self])
        #expect(made.count == 2)
        let tabbed = try await graph.resolve(ArgumentFactory<TabbedProfileKey, UserID, String, Int>.self)
        #expect(try await tabbed(UserID(raw: 3), "posts", 4).tab == "posts#4")
        try await graph.shutdown()
    }

    @Test func askingForTheProductItselfNamesTheFunction() async throws {
        var builder = builder()
        builder.provide(GreetingKey.self, dependsOn: ProfileKey.self) { "hello \($0.id.raw)" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.missingProvider])
        #expect(
            error.problems[0].message
                == "ProfileKey has no provider; GreetingKey requires it; it is made with arguments: depend on ArgumentFactory<ProfileKey, UserID> or ArgumentFactory<ProfileKey, UserID>.Synchronous, a function of them"
        )
        let graph = try await self.builder().build()
        let resolved = try await #require(throws: ServiceGraphError.self) { try await graph.resolve(ProfileKey.self) }
        #expect(resolved.codes == [.keyNotFound])
        #expect(
            resolved.problems[0].message
                == "ProfileKey is not in this graph; it is made with arguments: resolve ArgumentFactory<ProfileKey, UserID> or ArgumentFactory<ProfileKey, UserID>.Synchronous, a function of them"
        )
        try await graph.shutdown()
    }

    @Test func argumentTypesThatDoNotMatchAreAMissingKey() throws {
        var builder = builder()
        builder.provide(GreetingKey.self, dependsOn: ArgumentFactory<ProfileKey, String>.self) { _ in "" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.missingProvider])
        #expect(error.problems[0].key == "ProfileKey(String)")
        #expect(error.problems[0].path == ["GreetingKey", "ProfileKey(String)"])
    }

    @Test func theFunctionsDependenciesAreValidatedWithItsLifetime() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(RequestKey.self, lifetime: .scoped) { "request" }
        // A singleton function made from a scoped service would outlive the scope.
        builder.provide(GreetingKey.self, arguments: String.self, dependsOn: RequestKey.self) { "\($0) \($1)" }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.codes == [.captiveDependency])
        #expect(error.problems[0].key == "GreetingKey(String)")

        var scoped = ServiceGraph.Builder()
        scoped.provide(RequestKey.self, lifetime: .scoped) { "request" }
        scoped.provide(GreetingKey.self, lifetime: .scoped, arguments: String.self, dependsOn: RequestKey.self) {
            "\($0) for \($1)"
        }
        let graph = try await scoped.build()
        let scope = try graph.makeScope()
        let greet = try await scope.resolve(ArgumentFactory<GreetingKey, String>.self)
        #expect(try await greet("hi") == "hi for request")
        try await scope.close()
        try await graph.shutdown()
    }

    @Test func aTestOverridesTheFunction() async throws {
        var builder = builder()
        builder.override(ProfileKey.self, arguments: UserID.self, dependsOn: RepositoryKey.self) { id, _ in
            Profile(id: UserID(raw: id.raw * 100), repository: Repository(name: "double"))
        }
        let graph = try await builder.build()
        let profile = try await graph[ScreensKey.self].makeProfile(UserID(raw: 2))
        #expect(profile.id.raw == 200 && profile.repository.name == "double")
        try await graph.shutdown()
    }

    @Test func aFailingCallNamesNothingButThrowsTheFactorysError() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(GreetingKey.self, arguments: Int.self) { (value: Int) -> String in
            if value < 0 { throw TestFailure("negative") }
            return "\(value)"
        }
        let graph = try await builder.build()
        let greet = graph[ArgumentFactory<GreetingKey, Int>.self]
        #expect(try await greet(1) == "1")
        await #expect(throws: TestFailure("negative")) { try await greet(-1) }
        try await graph.shutdown()
    }

    @Test func dumpsNameTheFunctionWithItsArguments() async throws {
        let graph = try await builder().build()
        let text = graph.dump(.text)
        #expect(text.contains("ScreensKey: ProfileScreens [singleton"))
        #expect(text.contains("└─ ProfileKey(UserID): (UserID) async throws -> Profile [singleton function, #"))
        #expect(
            graph.dump(.dot).contains(
                "label=\"ProfileKey(UserID)\\n(UserID) async throws -> Profile\\nsingleton function"
            )
        )
        #expect(
            graph.dump(.mermaid).contains(
                "[\"ProfileKey(UserID)<br/>(UserID) async throws -#gt; Profile<br/>singleton function"
            )
        )
        struct Dump: Decodable {
            struct Service: Decodable {
                let key: String
                let arguments: [String]?
            }
            let services: [Service]
        }
        let services = try JSONDecoder().decode(Dump.self, from: Data(graph.dump(.json).utf8)).services
        // ProfileKey's closure does not await: the factory has a synchronous form too, TabbedProfileKey's none.
        #expect(services.map(\.arguments) == [nil, ["UserID"], ["UserID"], ["UserID", "String", "Int"], nil])
        #expect(services.map(\.key).contains("synchronous ProfileKey(UserID)"))
        #expect(!services.map(\.key).contains("synchronous TabbedProfileKey(UserID, String, Int)"))
        #expect(text.contains("synchronous ProfileKey(UserID): (UserID) throws -> Profile [singleton function, #"))
        try await graph.shutdown()
    }

    @MainActor
    @Test func aCallRunsOnTheCallersExecutor() async throws {
        let threads = Locked<[ObjectIdentifier]>([])
        var builder = ServiceGraph.Builder()
        builder.provide(GreetingKey.self, arguments: Int.self) { value in
            threads.withLock { $0.append(currentThread()) }
            return "\(value)"
        }
        let graph = try await builder.build()
        let greet = graph[ArgumentFactory<GreetingKey, Int>.self]
        for value in 0..<3 {
            let caller = currentThread()
            #expect(try await greet(value) == "\(value)")
            // Called from the main actor, the factory ran on the caller's thread: no hop and back.
            #expect(threads.withLock { $0.last } == caller)
        }
        try await graph.shutdown()
    }
}
