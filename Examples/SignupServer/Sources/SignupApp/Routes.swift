import Hummingbird
import ServiceGraph

/// The sign-up API. Each handler gets its services from the request's scope, opened for it by
/// ``RequestScopes``.
enum SignupRoutes {
    struct NewSignup: Decodable {
        let email: String
        let name: String
    }

    static func add(to router: Router<AppRequestContext>, scopes: RequestScopes) {
        router.post("/signups", in: scopes) { request, context, services -> EditedResponse<Signup> in
            let input = try await request.decode(as: NewSignup.self, context: context)
            let service = try await services.resolve(SignupServiceKey.self)
            do {
                return EditedResponse(
                    status: .created,
                    response: try await service.signUp(email: input.email, name: input.name)
                )
            } catch let error as SignupError {
                switch error {
                case .alreadySignedUp: throw HTTPError(.conflict, message: "\(error)")
                case .invalidEmail, .missingName: throw HTTPError(.badRequest, message: "\(error)")
                }
            }
        }
        router.get("/signups", in: scopes) { _, _, services -> [Signup] in
            try await services.resolve(SignupServiceKey.self).all()
        }
        router.get("/signups/:id", in: scopes) { _, context, services -> Signup in
            let id = try context.parameters.require("id", as: Int.self)
            guard let signup = try await services.resolve(SignupServiceKey.self).find(id: id) else {
                throw HTTPError(.notFound, message: "no sign-up #\(id)")
            }
            return signup
        }
        router.get("/health") { _, _ in "ok" }
    }
}

/// `GET /debug/graph?format=text|dot|mermaid|json` (the graph, with its initialization order and
/// timings) and `GET /debug/startup` (the startup report). Added only when the configuration enables
/// them.
enum DebugRoutes {
    static func add(to router: Router<AppRequestContext>, graph: ServiceGraph) {
        router.get("/debug/graph") { request, _ -> Response in
            let name = request.uri.queryParameters.get("format") ?? "text"
            let formats: [String: (DumpFormat, String)] = [
                "text": (.text, "text/plain; charset=utf-8"),
                "dot": (.dot, "text/vnd.graphviz; charset=utf-8"),
                "mermaid": (.mermaid, "text/plain; charset=utf-8"),
                "json": (.json, "application/json"),
            ]
            guard let (format, contentType) = formats[name] else {
                throw HTTPError(.badRequest, message: "format must be one of text, dot, mermaid, json")
            }
            return Response(
                status: .ok,
                headers: [.contentType: contentType],
                body: .init(byteBuffer: ByteBuffer(string: graph.dump(format)))
            )
        }
        router.get("/debug/startup") { _, _ in
            "\(graph.startupReport(slowest: 10))"
        }
    }
}
