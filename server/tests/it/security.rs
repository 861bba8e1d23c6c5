use crate::harness::TestServer;

#[tokio::test]
async fn without_a_session_pages_redirect_and_functions_refuse() {
    let server = TestServer::start().await;
    let client = server.client();

    let page = client.http.get(format!("{}/", server.base)).send().await.unwrap();
    assert_eq!(page.status(), 303);
    assert_eq!(page.headers()["location"], "/login");

    let (status, error) = client.call_json("conversations", &[]).await;
    assert_eq!(status, 401);
    assert_eq!(error, serde_json::json!("Unauthenticated"));

    let (status, _) = client.call_json("login", &[("username", "demo"), ("password", "wrong")]).await;
    assert_eq!(status, 401);
    let (status, _) = client.call_json("conversations", &[]).await;
    assert_eq!(status, 401, "a failed sign-in opens no session");
    server.stop().await;
}

#[tokio::test]
async fn someone_elses_conversation_reads_as_unknown_and_stays_unchanged() {
    let server = TestServer::start().await;
    let owner = server.signed_in("demo").await;
    let id = owner.create_conversation().await;
    let intruder = server.signed_in("mallory").await;

    let (status, _) = intruder.conversation(&id).await;
    assert_eq!(status, 404);
    let (status, _) = intruder.call_json("send_message", &[("conversation_id", &id), ("content", "mine now")]).await;
    assert_eq!(status, 404);
    let (_, list) = intruder.call_json("conversations", &[]).await;
    assert_eq!(list, serde_json::json!([]));

    let (_, conversation) = owner.conversation(&id).await;
    assert_eq!(conversation["status"], "idle");
    assert!(conversation["messages"].as_array().unwrap().is_empty());
    server.stop().await;
}

#[tokio::test]
async fn a_cross_site_post_is_refused_before_it_changes_anything() {
    let server = TestServer::start().await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;

    let response = client
        .http
        .post(format!("{}/api/send_message", server.base))
        .header("origin", "http://evil.example")
        .form(&[("conversation_id", id.as_str()), ("content", "forged")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);

    let same_origin = client
        .http
        .post(format!("{}/api/send_message", server.base))
        .header("origin", server.base.as_str())
        .form(&[("conversation_id", id.as_str()), ("content", "genuine")])
        .send()
        .await
        .unwrap();
    assert_eq!(same_origin.status(), 200);

    let conversation = client.settled_conversation(&id).await;
    let texts: Vec<&str> =
        conversation["messages"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap()).collect();
    assert!(!texts.contains(&"forged"));
    assert!(texts.contains(&"genuine"));
    server.stop().await;
}

#[tokio::test]
async fn an_oversized_body_is_refused() {
    let server = TestServer::start().await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    let huge = "y".repeat(server::MAX_BODY_BYTES + 1);
    let response = client.call("send_message", &[("conversation_id", &id), ("content", &huge)]).await;
    assert_eq!(response.status(), 413);
    let (_, conversation) = client.conversation(&id).await;
    assert!(conversation["messages"].as_array().unwrap().is_empty());
    server.stop().await;
}

#[tokio::test]
async fn signing_out_ends_the_session() {
    let server = TestServer::start().await;
    let client = server.signed_in("demo").await;
    let (status, session) = client.call_json("session", &[]).await;
    assert_eq!(status, 200);
    assert_eq!(session["username"], "demo");
    assert_eq!(session["model_is_demo"], true);

    client.call("logout", &[]).await;
    let (status, _) = client.call_json("session", &[]).await;
    assert_eq!(status, 401);
    server.stop().await;
}

#[tokio::test]
async fn the_session_cookie_is_http_only_and_secure_behind_tls() {
    let server = TestServer::start().await;
    let client = server.client();
    let plain = client.call("login", &[("username", "demo"), ("password", crate::harness::PASSWORD)]).await;
    let cookie = plain.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"), "{cookie}");
    assert!(!cookie.contains("Secure"), "plain HTTP cannot keep a Secure cookie: {cookie}");

    let proxied = client
        .http
        .post(format!("{}/api/login", server.base))
        .header("x-forwarded-proto", "https")
        .form(&[("username", "demo"), ("password", crate::harness::PASSWORD)])
        .send()
        .await
        .unwrap();
    let cookie = proxied.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.contains("; Secure"), "{cookie}");
    server.stop().await;
}
