import ServiceGraph
import Testing
import ServiceGraphTestSupport

@Suite("Dumps of broken graphs")
struct BrokenGraphDumpTests {
    @Test func aBrokenBuilderMarksTheRootCauseApartFromWhatItBlocks() throws {
        let builder = DiagnosticsFixtures.brokenBuilder()
        let text = builder.dump(.text)
        #expect(text.contains("DiagMissing (missing provider)"))
        #expect(text.contains("DiagStore: Int [singleton, override]"))
        #expect(text.contains("✗ missing provider"), "the store, which needs the missing key, is a root cause")
        #expect(
            text.contains("DiagHandler: Int [transient] @ ServiceGraphTests/DiagnosticsFixtures.swift:20  (not built")
        )
        #expect(text.contains("Problems:\n  1. DiagMissing has no provider; DiagStore requires it"))
        let dot = builder.dump(.dot)
        #expect(dot.contains(#"  m0 [label="DiagMissing\nmissing provider", style="dashed,filled""#))
        #expect(dot.contains(#"  s2 -> m0 [style=dashed"#), "DiagStore → DiagMissing")
    }

    @Test func aFailedValidationCanBeDumpedFromItsError() throws {
        let error = try #require(throws: ServiceGraphError.self) { try DiagnosticsFixtures.brokenBuilder().validate() }
        let json = try #require(error.dump(.json))
        #expect(json.contains(#""missingKeys": [\#n    "DiagMissing"\#n  ]"#))
        #expect(json.contains(#""mark": "rootCause""#))
        #expect(json.contains(#""mark": "affected""#))
    }

    @Test func aFailedBuildCanBeDumpedWithWhatWasCreatedAndWhereItBroke() async throws {
        var builder = DiagnosticsFixtures.builder()
        builder.override(DiagStore.self, dependsOn: DiagConfig.self) { _ in throw TestFailure("disk full") }
        let error = await #expect(throws: ServiceGraphError.self) { try await builder.build() }
        let text = try #require(error?.dump(.text))
        #expect(text.contains("DiagConfig: String [singleton, #1]"), "created before the failure, then released")
        #expect(text.contains("✗ factory failed"))
        #expect(
            text.contains("DiagHandler: Int [transient] @ ServiceGraphTests/DiagnosticsFixtures.swift:20  (not built")
        )
        #expect(text.contains("the factory of DiagStore threw: disk full"))
    }

    @Test func errorsAboutOneResolveHaveNoGraphToDump() async throws {
        let graph = try await DiagnosticsFixtures.builder().build()
        let error = try #require(throws: ServiceGraphError.self) { try graph.resolveSynchronously(DiagMissing.self) }
        #expect(error.dump() == nil)
    }
}
