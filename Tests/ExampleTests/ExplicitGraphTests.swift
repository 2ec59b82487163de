import ServiceGraph
import Testing

@testable import ExplicitGraph

@Suite("Example: the graph passed explicitly")
struct ExplicitGraphTests {
    @Test func twoAppsWithTheirOwnGraphsLiveSideBySide() async throws {
        let metric = Config(baseURL: "https://test", units: "metric")
        let imperial = Config(baseURL: "https://test", units: "imperial")
        let http = CannedHTTP(responses: [
            "https://test/Oslo?units=metric": "4 °C",
            "https://test/Oslo?units=imperial": "39 °F",
        ])
        let first = App(graph: try await makeGraph(config: metric, http: http).build())
        let second = App(graph: try await makeGraph(config: imperial, http: http).build())
        #expect(try await first.forecast(for: "Oslo") == "Oslo: 4 °C")
        #expect(try await second.forecast(for: "Oslo") == "Oslo: 39 °F")
    }

    @Test func everyFactoryDeclaresWhatItNeedsSoTheGraphIsCheckedBeforeItRuns() throws {
        var broken = makeGraph(config: .production, http: CannedHTTP(responses: [:]))
        broken.override(WeatherAPIKey.self, dependsOn: HTTPKey.self, ForecastScreenKey.self) { http, _ in
            WeatherAPI(http: http, config: .production)
        }
        let error = try #require(throws: ServiceGraphError.self) { try broken.validate() }
        #expect(error.contains(.cycle))
    }
}
