import ServiceGraph
import ServiceGraphTesting
import Testing

private enum SettingsKey: ServiceKey { typealias Value = String }
private enum ClockKey: ServiceKey { typealias Value = Int }
private enum GreetingKey: ServiceKey { typealias Value = String }

private struct GreetingModule: GraphModule {
    func register(in builder: inout ServiceGraph.Builder) {
        builder.provide(GreetingKey.self, dependsOn: SettingsKey.self) { "hello, \($0)" }
    }
}

@Suite("Module expectations")
struct ModuleExpectationTests {
    @Test func aModuleNeedingExactlyWhatItDeclaresPasses() {
        expectValidModule(GreetingModule(), needing: SettingsKey.self)
    }

    @Test func aModuleNeedingAnUndeclaredKeyIsAnIssue() {
        withKnownIssue("the module needs SettingsKey, which the test does not declare") {
            expectValidModule(GreetingModule())
        }
    }

    @Test func aDeclaredNeedTheModuleDoesNotHaveIsAnIssue() {
        withKnownIssue("the module does not need ClockKey") {
            expectValidModule(GreetingModule(), needing: SettingsKey.self, ClockKey.self)
        }
    }
}
