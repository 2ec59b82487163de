import ServiceGraph

let http = CannedHTTP(responses: ["https://weather.example/Oslo?units=metric": "4 °C"])
let graph = try await makeGraph(config: .production, http: http).build()
let app = App(graph: graph)
print(try await app.forecast(for: "Oslo"))
try await graph.shutdown()
