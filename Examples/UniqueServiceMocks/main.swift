import ServiceGraph

let graph = try await makeShop().build()
for line in graph[OrderServiceKey.self].place(7) {
    print(line)
}
try await graph.shutdown()
