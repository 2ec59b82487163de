import Foundation
import SQLiteNIO
import Testing

/// The real server, as a child process, over real HTTP on loopback, with a real SQLite file.
@Suite("SignupServer end to end", .serialized)
struct EndToEndTests {
    @Test func servesTheAPIStoresTheRowsAndShutsDownInTheGraphsOrderOnSIGTERM() async throws {
        try await withTemporaryDirectory { directory in
            let database = directory.appendingPathComponent("signups.sqlite").path
            let server = try ServerProcess(arguments: [
                "--port", "0", "--database", database, "--debug-endpoints", "--outbox-interval-ms", "50",
            ])
            let port = try #require(Int(try await server.waitForLog(#"listening on 127\.0\.0\.1:(\d+)"#)))
            let client = Client(port: port)

            let created = try await client.send("POST", "/signups", json: #"{"email":"Ann@Example.org","name":"Ann"}"#)
            #expect(created.status == 201)
            #expect(created.body.contains(#""email":"ann@example.org""#))
            #expect(
                try await client.send("POST", "/signups", json: #"{"email":"bob@example.org","name":"Bob"}"#).status
                    == 201
            )
            #expect(
                try await client.send("POST", "/signups", json: #"{"email":"ann@example.org","name":"Ann"}"#).status
                    == 409
            )
            #expect(try await client.send("POST", "/signups", json: #"{"email":"nobody","name":"X"}"#).status == 400)
            #expect(try await client.send("POST", "/signups", json: #"{"email":1}"#).status == 400)
            let list = try await client.send("GET", "/signups")
            #expect(list.status == 200)
            #expect(list.body.contains("ann@example.org") && list.body.contains("bob@example.org"))
            #expect(try await client.send("GET", "/signups/2").body.contains("bob@example.org"))
            #expect(try await client.send("GET", "/signups/99").status == 404)

            // The debug endpoints, enabled by --debug-endpoints.
            let json = try await client.send("GET", "/debug/graph?format=json")
            #expect(json.status == 200)
            let dump = try JSONSerialization.jsonObject(with: Data(json.body.utf8)) as? [String: Any]
            #expect(dump != nil)
            #expect(json.body.contains("DatabaseKey") && json.body.contains("OutboxWorkerKey"))
            #expect(try await client.send("GET", "/debug/graph?format=dot").body.hasPrefix("digraph"))
            #expect(try await client.send("GET", "/debug/graph?format=mermaid").body.hasPrefix("flowchart"))
            #expect(try await client.send("GET", "/debug/graph").body.contains("DatabaseKey"))
            #expect(try await client.send("GET", "/debug/graph?format=yaml").status == 400)
            let startup = try await client.send("GET", "/debug/startup")
            #expect(startup.status == 200 && startup.body.hasPrefix("Startup took"))

            // The outbox worker sends both welcome mails.
            _ = try await server.waitForLog("mail: to bob@example.org")
            server.signal(SIGTERM)
            #expect(try await server.waitForExit() == 0)

            // The shutdown order the graph implies: the server stops accepting, then the outbox (which
            // uses the database), then the database; then the hooks, in reverse dependency order.
            let order = [
                "stopped: HTTP server", "stopped: OutboxWorkerKey", "stopped: DatabaseKey",
                "graph: willRemove DatabaseKey", "graph: shutdown finished",
            ]
            let positions = order.map { server.line(containing: $0) }
            #expect(!positions.contains(nil), "missing from the log:\n\(server.log)")
            #expect(positions.compactMap { $0 } == positions.compactMap { $0 }.sorted(), "\(server.log)")
            // And the startup order: the database was running before the outbox and the server started.
            let running = try #require(server.line(containing: "database: running"))
            #expect(running < (server.line(containing: "started: OutboxWorkerKey") ?? -1))
            #expect(running < (server.line(containing: "started: HTTP server") ?? -1))

            // The rows, read from the file the server left.
            let connection = try await SQLiteConnection.open(storage: .file(path: database))
            let signups = try await connection.query("SELECT email, name FROM signups ORDER BY id")
            #expect(signups.compactMap { $0.column("email")?.string } == ["ann@example.org", "bob@example.org"])
            let outbox = try await connection.query("SELECT address FROM outbox WHERE sent_at IS NOT NULL ORDER BY id")
            #expect(outbox.compactMap { $0.column("address")?.string } == ["ann@example.org", "bob@example.org"])
            try await connection.close()
        }
    }

    @Test func anUnwritableDatabaseFailsTheStartNamingTheServiceAndPathAndStartsNothing() async throws {
        let path = "/nonexistent-\(UInt32.random(in: 0...UInt32.max))/signups.sqlite"
        let server = try ServerProcess(arguments: ["--port", "0", "--database", path])
        let status = try await server.waitForExit()
        #expect(status != 0)
        let log = server.log
        #expect(log.contains("DatabaseKey"), "\(log)")
        #expect(log.contains(path), "\(log)")
        // The dependency path to the service that failed.
        #expect(log.contains("SignupRepositoryKey → DatabaseKey"), "\(log)")
        // Nothing started: no service ran, the server never listened.
        #expect(!log.contains("started:") && !log.contains("listening on"), "\(log)")
        #expect(!log.contains("database: opened"), "\(log)")
    }

    @Test func debugEndpointsAreOffUnlessEnabledAndSIGINTAlsoShutsDownCleanly() async throws {
        try await withTemporaryDirectory { directory in
            let database = directory.appendingPathComponent("signups.sqlite").path
            let server = try ServerProcess(arguments: ["--port", "0", "--database", database])
            let port = try #require(Int(try await server.waitForLog(#"listening on 127\.0\.0\.1:(\d+)"#)))
            let client = Client(port: port)
            #expect(try await client.send("GET", "/debug/graph").status == 404)
            #expect(try await client.send("GET", "/debug/startup").status == 404)
            #expect(try await client.send("GET", "/health").body == "ok")
            server.signal(SIGINT)
            #expect(try await server.waitForExit() == 0)
            #expect(server.log.contains("graph: shutdown finished"))
        }
    }
}
