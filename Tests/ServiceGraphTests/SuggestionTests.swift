import ServiceGraph
import Synchronization
import Testing
import ServiceGraphTestSupport

private protocol Logging: Sendable {}
private struct Console: Logging {}
private enum LoggerKey: ServiceKey { typealias Value = any Logging }
private enum ConsoleLoggerKey: ServiceKey { typealias Value = any Logging }
/// Decorates the logger it depends on, so it provides the very type it requires.
private enum TimestampingLoggerKey: ServiceKey { typealias Value = any Logging }

/// One of many keys of one type.
private enum TaggedLoggerKey<Tag: GeneratedKey>: ServiceKey { typealias Value = any Logging }

/// How many times the names of the counted keys were read.
private let nameReads = Atomic<Int>(0)

/// A key that counts how often its name is read: making "did you mean" suggestions reads every name.
private enum CountedKey<Tag>: ServiceKey {
    typealias Value = Int
    static var serviceName: String {
        nameReads.add(1, ordering: .relaxed)
        return "Counted\(Tag.self)"
    }
}

private enum Alpha {}
private enum Beta {}
private enum Gamma {}
private enum Absent: ServiceKey { typealias Value = Int }

@Suite("Did you mean")
struct SuggestionTests {
    @Test func neverSuggestsTheServiceThatRequiresTheMissingKey() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(TimestampingLoggerKey.self, dependsOn: LoggerKey.self) { $0 }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        #expect(error.problems.count == 1)
        #expect(error.problems[0].message == "LoggerKey has no provider; TimestampingLoggerKey requires it")
    }

    @Test func suggestsTheOtherKeysOfTheTypeButNotTheRequiringOne() throws {
        var builder = ServiceGraph.Builder()
        builder.provide(TimestampingLoggerKey.self, dependsOn: LoggerKey.self) { $0 }
        builder.provide(ConsoleLoggerKey.self) { Console() }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        let message = error.problems[0].message
        #expect(message.contains("Did you mean ConsoleLoggerKey?"), "\(message)")
        #expect(!message.contains("Did you mean TimestampingLoggerKey"), "\(message)")
        #expect(!message.contains("more keys"), "the requiring key is not counted among the others: \(message)")
    }

    @Test func neverSuggestsTheRequiringKeyAmongManyKeysOfTheType() throws {
        // More than 16 keys of the type: the first registered are shown, but not the requiring one.
        var builder = ServiceGraph.Builder()
        builder.provide(TimestampingLoggerKey.self, dependsOn: LoggerKey.self) { $0 }
        for index in 0..<20 {
            func open<Tag: GeneratedKey>(_: Tag.Type) { builder.provide(TaggedLoggerKey<Tag>.self) { Console() } }
            open(GeneratedKeys.key(index, bits: 5))
        }
        let error = try #require(throws: ServiceGraphError.self) { try builder.validate() }
        let message = error.problems[0].message
        #expect(message.contains("Did you mean TaggedLoggerKey<"), "\(message)")
        #expect(!message.contains("TimestampingLoggerKey,") && !message.contains("mean TimestampingLoggerKey"))
        #expect(message.contains("(or 17 more keys of that type)"), "20 others, 3 shown: \(message)")
    }

    @Test func aMissBuildsNoSuggestionsUntilTheMessageIsRead() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(CountedKey<Alpha>.self) { 1 }
        builder.provide(CountedKey<Beta>.self) { 2 }
        builder.provide(CountedKey<Gamma>.self) { 3 }
        let graph = try await builder.build()
        let before = nameReads.load(ordering: .relaxed)

        // Caught by hand: `#require(throws:)` would describe the error, and so read its message.
        _ = try? await graph.resolve(Absent.self)
        var caught: ServiceGraphError?
        do { _ = try graph.resolveSynchronously(Absent.self) } catch { caught = error as? ServiceGraphError }
        let error = try #require(caught)
        #expect(error.codes == [.keyNotFound])
        #expect(error.problems[0].key == "Absent")
        #expect(nameReads.load(ordering: .relaxed) == before, "a miss reads no key name")

        let message = error.problems[0].message
        #expect(nameReads.load(ordering: .relaxed) > before, "reading the message finds the closest keys")
        #expect(message.hasPrefix("Absent is not in this graph; closest keys: "), "\(message)")
        #expect(["CountedAlpha", "CountedBeta", "CountedGamma"].allSatisfy(message.contains), "\(message)")
        #expect(error.problems[0].message == message, "the message is written once")
        #expect(error.description == "ServiceGraph: \(message)")
    }
}
