import ServiceGraph

let graph = try await makeCreator().build()
let viewModel = try await graph.resolve(ProfileViewModelKey.self)
await viewModel.load(id: "42")
print(viewModel.text)
try await graph.shutdown()
