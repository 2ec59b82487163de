import ServiceGraph
import ServiceGraphTestSupport
import Testing

@testable import CreatorMocks

/// The test's "mock creator": the app's builder with doubles, each found again by its key.
final class MockProfiles: ProfileLoading {
    private let requests = Locked<[String]>([])

    var requested: [String] { requests.withLock { $0 } }

    func profile(id: String) async throws -> Profile {
        requests.withLock { $0.append(id) }
        return Profile(id: id, name: "Ada")
    }
}

final class MockAvatars: AvatarLoading {
    private let seen = Locked<[Profile]>([])

    var requested: [Profile] { seen.withLock { $0 } }

    func avatar(for profile: Profile) async -> String {
        seen.withLock { $0.append(profile) }
        return "avatar.png"
    }
}

@Suite("Example: a creator swapped for mocks")
struct CreatorMocksTests {
    @Test func theViewModelUsesTheMocksAndTheTestFindsThemAgainByKey() async throws {
        var creator = makeCreator()
        let profiles = creator.override(ProfileLoaderKey.self, withDouble: { MockProfiles() }, as: { $0 })
        let avatars = creator.override(AvatarLoaderKey.self, withDouble: { MockAvatars() }, as: { $0 })
        let graph = try await creator.build()

        let viewModel = try await graph.resolve(ProfileViewModelKey.self)
        await viewModel.load(id: "42")

        #expect(viewModel.text == "Ada [avatar.png]")
        #expect(graph[profiles].requested == ["42"])  // a MockProfiles: found again, typed
        #expect(graph[avatars].requested == [Profile(id: "42", name: "Ada")])
        try await graph.shutdown()
    }

    @Test func theAppsOwnCreatorIsUntouched() async throws {
        var creator = makeCreator()
        creator.override(ProfileLoaderKey.self, withDouble: { MockProfiles() }, as: { $0 })
        let graph = try await makeCreator().build()
        #expect(graph[ProfileLoaderKey.self] is RemoteProfiles)
    }
}
