import ServiceGraph

// The pattern: a service locator passed explicitly to every factory (no `static let shared`), each
// factory fishing out what it needs: `APIClient(locator: locator)`, then `locator.get(HTTP.self)`
// inside. Honest about the locator, but a factory can still reach anything, so what a service
// needs shows only at run time.
//
// In ServiceGraph: the graph is a value made in `main` and handed to the composition root; each
// factory receives exactly the dependencies it declared, so the whole graph is known (and checked)
// before anything runs. Nothing is global: a test makes its own graph.

struct Config: Sendable {
    var baseURL: String
    var units: String

    static let production = Config(baseURL: "https://weather.example", units: "metric")
}

protocol HTTPClient: Sendable {
    func get(_ url: String) async throws -> String
}

/// A stand-in for a real HTTP client: answers from a table.
struct CannedHTTP: HTTPClient {
    let responses: [String: String]

    func get(_ url: String) async throws -> String {
        guard let response = responses[url] else { throw MissingResponse(url: url) }
        return response
    }

    struct MissingResponse: Error {
        let url: String
    }
}

struct WeatherAPI: Sendable {
    let http: any HTTPClient
    let config: Config

    func temperature(in city: String) async throws -> String {
        try await http.get("\(config.baseURL)/\(city)?units=\(config.units)")
    }
}

struct ForecastScreen: Sendable {
    let api: WeatherAPI

    func render(_ city: String) async throws -> String {
        "\(city): \(try await api.temperature(in: city))"
    }
}

enum ConfigKey: ServiceKey { typealias Value = Config }
enum HTTPKey: ServiceKey { typealias Value = any HTTPClient }
enum WeatherAPIKey: ServiceKey { typealias Value = WeatherAPI }
enum ForecastScreenKey: ServiceKey { typealias Value = ForecastScreen }

/// The composition root: every dependency declared, none fetched.
func makeGraph(config: Config, http: any HTTPClient) -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.provide(ConfigKey.self) { config }
    builder.provide(HTTPKey.self) { http }
    builder.provide(WeatherAPIKey.self, dependsOn: HTTPKey.self, ConfigKey.self) { WeatherAPI(http: $0, config: $1) }
    builder.provide(ForecastScreenKey.self, lifetime: .transient, dependsOn: WeatherAPIKey.self) {
        ForecastScreen(api: $0)
    }
    builder.declareEntryPoints(ForecastScreenKey.self)
    return builder
}

/// The application receives its graph; it never reaches for a global one.
struct App: Sendable {
    let graph: ServiceGraph

    func forecast(for city: String) async throws -> String {
        try await graph.resolve(ForecastScreenKey.self).render(city)
    }
}
