import ServiceGraph
import Synchronization

// The pattern: a protocol-composed "Creator" makes a view-model's dependencies; tests use a
// "MockCreator" that returns mocks, and `find` them again afterwards to see what they recorded.
//
// In ServiceGraph: the creator is the application's builder. A test copies it and overrides keys
// with doubles; `override(_:withDouble:as:)` returns a key under which the graph holds the double with
// its own type, so finding it again is `graph[key]`: no cast, no global mock registry.

struct Profile: Sendable, Equatable {
    let id: String
    let name: String
}

protocol ProfileLoading: Sendable {
    func profile(id: String) async throws -> Profile
}

protocol AvatarLoading: Sendable {
    func avatar(for profile: Profile) async -> String
}

struct RemoteProfiles: ProfileLoading {
    func profile(id: String) async throws -> Profile { Profile(id: id, name: "User \(id)") }
}

struct RemoteAvatars: AvatarLoading {
    func avatar(for profile: Profile) async -> String { "https://avatars.example/\(profile.id).png" }
}

/// The view-model: what the screen shows, from the loaders the creator gives it.
final class ProfileViewModel: Sendable {
    private let profiles: any ProfileLoading
    private let avatars: any AvatarLoading
    private let state = Mutex<String>("loading")

    init(profiles: any ProfileLoading, avatars: any AvatarLoading) {
        self.profiles = profiles
        self.avatars = avatars
    }

    var text: String { state.withLock { $0 } }

    func load(id: String) async {
        do {
            let profile = try await profiles.profile(id: id)
            let avatar = await avatars.avatar(for: profile)
            state.withLock { $0 = "\(profile.name) [\(avatar)]" }
        } catch {
            state.withLock { $0 = "could not load \(id)" }
        }
    }
}

enum ProfileLoaderKey: ServiceKey { typealias Value = any ProfileLoading }
enum AvatarLoaderKey: ServiceKey { typealias Value = any AvatarLoading }
enum ProfileViewModelKey: ServiceKey { typealias Value = ProfileViewModel }

/// The creator: the application's wiring.
func makeCreator() -> ServiceGraph.Builder {
    var builder = ServiceGraph.Builder()
    builder.provide(ProfileLoaderKey.self) { RemoteProfiles() }
    builder.provide(AvatarLoaderKey.self) { RemoteAvatars() }
    builder.provide(
        ProfileViewModelKey.self,
        lifetime: .transient,
        dependsOn: ProfileLoaderKey.self,
        AvatarLoaderKey.self
    ) {
        ProfileViewModel(profiles: $0, avatars: $1)
    }
    builder.declareEntryPoints(ProfileViewModelKey.self)
    return builder
}
