use server::html_tags::start_tags as tags_of;

use crate::harness::{refused, TestServer};

#[tokio::test]
async fn without_a_session_pages_redirect_and_functions_refuse() {
    let server = TestServer::start().await;
    let client = server.client();

    let page = client.http.get(format!("{}/", server.base)).send().await.unwrap();
    assert_eq!(page.status(), 303);
    assert_eq!(page.headers()["location"], "/login");

    let (status, error) = client.call_json("conversations", &[]).await;
    assert_eq!(status, 401);
    assert_eq!(error, refused("unauthenticated", "Please sign in first."));

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
    let texts = crate::harness::texts(&conversation);
    assert!(!texts.iter().any(|text| text == "forged"));
    assert!(texts.iter().any(|text| text == "genuine"));
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
async fn the_session_cookie_is_http_only_and_secure_only_when_the_operator_says_https() {
    let server = TestServer::start().await;
    let client = server.client();
    let plain = client.call("login", &[("username", "demo"), ("password", crate::harness::PASSWORD)]).await;
    let cookie = plain.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"), "{cookie}");
    assert!(!cookie.contains("Secure"), "plain HTTP cannot keep a Secure cookie: {cookie}");
    assert!(plain.headers().get("strict-transport-security").is_none());

    // Anyone can send X-Forwarded-Proto; without a trusted proxy it says nothing.
    let cookie = session_cookie_claiming_https(&server).await;
    assert!(!cookie.contains("Secure"), "{cookie}");
    server.stop().await;

    // From a proxy the operator trusts, it is believed.
    let server = TestServer::start_adjusted(|config| {
        config.trusted_proxies = server::proxies::TrustedProxies::parse("127.0.0.1").unwrap();
    })
    .await;
    let cookie = session_cookie_claiming_https(&server).await;
    assert!(cookie.contains("; Secure"), "{cookie}");
    server.stop().await;

    let server = TestServer::start_adjusted(|config| {
        config.public_url = server::config::PublicUrl::parse("https://chat.example.com");
    })
    .await;
    let client = server.client();
    let response = client.call("login", &[("username", "demo"), ("password", crate::harness::PASSWORD)]).await;
    let cookie = response.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.contains("; Secure"), "{cookie}");
    assert_eq!(response.headers()["strict-transport-security"], "max-age=63072000");
    let page = client.http.get(format!("{}/login", server.base)).send().await.unwrap();
    assert_eq!(page.headers()["strict-transport-security"], "max-age=63072000");
    server.stop().await;
}

/// The session cookie of a sign-in that says it came over TLS (`X-Forwarded-Proto: https`).
async fn session_cookie_claiming_https(server: &TestServer) -> String {
    let response = server
        .client()
        .http
        .post(format!("{}/api/login", server.base))
        .header("x-forwarded-proto", "https")
        .form(&[("username", "demo"), ("password", crate::harness::PASSWORD)])
        .send()
        .await
        .unwrap();
    response.headers()["set-cookie"].to_str().unwrap().to_string()
}

/// The headers every response must carry, read from a real response.
fn assert_secured(what: &str, response: &reqwest::Response) {
    let headers = response.headers();
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_else(|| panic!("{what}: no {name}"))
            .to_string()
    };
    assert_eq!(get("x-frame-options"), "DENY", "{what}");
    assert_eq!(get("x-content-type-options"), "nosniff", "{what}");
    assert_eq!(get("referrer-policy"), "strict-origin-when-cross-origin", "{what}");
    assert!(get("permissions-policy").contains("camera=()"), "{what}");
    let csp = get("content-security-policy");
    assert!(csp.contains("frame-ancestors 'none'"), "{what}: {csp}");
    assert!(!csp.contains("unsafe-inline"), "{what}: {csp}");
}

#[tokio::test]
async fn every_page_and_api_answers_with_the_security_headers() {
    let server = TestServer::start().await;
    let anonymous = server.client();
    let login = anonymous.http.get(format!("{}/login", server.base)).send().await.unwrap();
    assert_secured("the sign-in page", &login);
    assert_eq!(login.headers()["cache-control"], "no-store");
    let redirect = anonymous.http.get(format!("{}/runs", server.base)).send().await.unwrap();
    assert_eq!(redirect.status(), 303);
    assert_secured("a redirect to sign in", &redirect);

    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    for path in [
        "/".to_string(),
        format!("/c/{id}"),
        "/runs".into(),
        "/tools".into(),
        "/pages".into(),
        "/account".into(),
        "/admin".into(),
        // Shows the next webhook's secret: never cached.
        "/admin/webhooks".into(),
        "/audit".into(),
        "/no-such-page".into(),
    ] {
        let response = client.http.get(format!("{}{path}", server.base)).send().await.unwrap();
        assert_secured(&path, &response);
        assert_eq!(response.headers()["cache-control"], "no-store", "{path}");
        let csp = response.headers()["content-security-policy"].to_str().unwrap().to_string();
        let nonce = csp
            .split("; ")
            .find_map(|part| part.strip_prefix("script-src "))
            .and_then(|sources| sources.split(' ').find_map(|source| source.strip_prefix("'nonce-")))
            .and_then(|nonce| nonce.strip_suffix('\''))
            .unwrap_or_else(|| panic!("{path}: no nonce in {csp}"))
            .to_string();
        let html = response.text().await.unwrap();
        // Every script of the page bears the nonce of its own response, and only that one.
        let scripts: Vec<_> = tags_of(&html).into_iter().filter(|(name, _)| name == "script").collect();
        assert!(!scripts.is_empty(), "{path}");
        for (_, attributes) in &scripts {
            let bears = attributes.iter().find(|(name, _)| name == "nonce").map(|(_, value)| value.as_str());
            assert_eq!(bears, Some(nonce.as_str()), "{path}: a script without this response's nonce");
        }
        // Only a script's `nonce` attribute holds it (the browser hides that one from the page's
        // own scripts); any other attribute would hand it to whatever reads the DOM.
        for (name, attributes) in tags_of(&html) {
            for (attribute, value) in attributes {
                if attribute != "nonce" {
                    assert!(!value.contains(&nonce), "{path}: <{name} {attribute}> holds the nonce");
                }
                if attribute == "crossorigin" {
                    assert_eq!(value, "anonymous", "{path}: <{name}>");
                }
            }
        }
    }
    let again = client.http.get(format!("{}/c/{id}", server.base)).send().await.unwrap();
    let first = client.http.get(format!("{}/c/{id}", server.base)).send().await.unwrap();
    assert_ne!(
        again.headers()["content-security-policy"],
        first.headers()["content-security-policy"],
        "a nonce per response"
    );

    let json = client.call("conversation", &[("id", id.as_str())]).await;
    assert_secured("JSON", &json);
    assert_eq!(json.headers()["cache-control"], "no-store");
    assert!(json.headers()["content-security-policy"].to_str().unwrap().starts_with("default-src 'none'"));
    let poll = client.call("poll", &[("id", id.as_str()), ("after", "0")]).await;
    assert_secured("the poll", &poll);
    let refused = client.call("answer", &[("id", id.as_str())]).await;
    assert!(refused.status().is_client_error());
    assert_secured("a refused call", &refused);
    server.stop().await;
}

/// The session token a sign-in hands out, read from its Set-Cookie header.
async fn fresh_token(server: &TestServer) -> String {
    let client = reqwest::Client::builder()
        .timeout(crate::harness::REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = client
        .post(format!("{}/api/login", server.base))
        .form(&[("username", "demo"), ("password", crate::harness::PASSWORD)])
        .send()
        .await
        .unwrap();
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    cookie.split(';').next().unwrap().trim_start_matches("tourguide_session=").to_string()
}

#[tokio::test]
async fn a_missing_forged_or_revoked_session_is_refused_everywhere_and_changes_nothing() {
    let server = TestServer::start().await;
    let owner = server.signed_in("demo").await;
    let id = owner.create_conversation().await;
    let (_, before) = owner.conversation(&id).await;

    let revoked = fresh_token(&server).await;
    let plain = reqwest::Client::builder()
        .timeout(crate::harness::REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let logout = plain
        .post(format!("{}/api/logout", server.base))
        .header("cookie", format!("tourguide_session={revoked}"))
        .send()
        .await
        .unwrap();
    assert!(logout.status().is_success() || logout.status().is_redirection(), "{}", logout.status());

    let forged_cookies = [
        None,
        Some(format!("tourguide_session={}", "a".repeat(64))),
        Some(format!("tourguide_session={revoked}")),
        Some("tourguide_session=".to_string()),
        Some("tourguide_session=%00%ff; tourguide_session=../../etc".to_string()),
    ];
    for cookie in &forged_cookies {
        let with = |request: reqwest::RequestBuilder| match cookie {
            Some(cookie) => request.header("cookie", cookie),
            None => request,
        };
        let api = |name: &str| format!("{}/api/{name}", server.base);
        let read = with(plain.post(api("conversation"))).form(&[("id", id.as_str())]).send().await.unwrap();
        assert_eq!(read.status(), 401, "{cookie:?}");
        let poll = with(plain.post(api("poll"))).form(&[("id", id.as_str()), ("after", "0")]).send().await.unwrap();
        assert_eq!(poll.status(), 401, "{cookie:?}");
        let write = with(plain.post(api("send_message")))
            .form(&[("conversation_id", id.as_str()), ("content", "forged")])
            .send()
            .await
            .unwrap();
        assert_eq!(write.status(), 401, "{cookie:?}");
        // The answer checks its session in its own read, as the poll does; from the inbox too.
        for run in ["", "a-run"] {
            let answer = with(plain.post(api("answer")))
                .form(&[("conversation_id", id.as_str()), ("digest", "d"), ("choice", "\"yes\""), ("run", run)])
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status(), 401, "{cookie:?} {run:?}");
        }
        let page = with(plain.get(format!("{}/c/{id}", server.base))).send().await.unwrap();
        assert_eq!(page.status(), 303, "{cookie:?}");
        assert_eq!(page.headers()["location"], "/login");
        let events = with(plain.get(format!("{}/events/conversations/{id}", server.base))).send().await.unwrap();
        assert_eq!(events.status(), 401, "{cookie:?}");
    }
    let (_, after) = owner.conversation(&id).await;
    assert_eq!(after, before, "nothing changed");
    server.stop().await;
}

#[tokio::test]
async fn cross_site_requests_are_refused_by_origin_null_and_fetch_metadata() {
    let server = TestServer::start().await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    let url = format!("{}/api/send_message", server.base);
    let form = [("conversation_id", id.as_str()), ("content", "forged")];
    let null_origin = client.http.post(&url).header("origin", "null").form(&form).send().await.unwrap();
    assert_eq!(null_origin.status(), 403, "a sandboxed frame or data: page");
    let metadata = client.http.post(&url).header("sec-fetch-site", "cross-site").form(&form).send().await.unwrap();
    assert_eq!(metadata.status(), 403, "a browser that names the request cross-site, without Origin");
    let other_port = client
        .http
        .post(&url)
        .header("origin", server.base.replace("127.0.0.1:", "127.0.0.1:1"))
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(other_port.status(), 403, "another port is another origin");
    let (_, conversation) = client.conversation(&id).await;
    assert!(conversation["messages"].as_array().unwrap().is_empty());
    server.stop().await;
}

#[tokio::test]
async fn wrong_content_types_and_malformed_bodies_are_refused_and_change_nothing() {
    let server = TestServer::start().await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    let url = format!("{}/api/send_message", server.base);
    let json_body = serde_json::json!({ "conversation_id": id, "content": "as json" }).to_string();
    let attempts = [
        ("application/json", json_body.clone()),
        ("text/plain", format!("conversation_id={id}&content=as+text")),
        (
            "multipart/form-data; boundary=x",
            "--x\r\nContent-Disposition: form-data; name=\"content\"\r\n\r\nhi\r\n--x--".to_string(),
        ),
        ("application/x-www-form-urlencoded", "conversation_id=%zz&content=%".to_string()),
        ("application/x-www-form-urlencoded", format!("conversation_id={id}")),
        ("application/x-www-form-urlencoded", String::new()),
    ];
    for (content_type, body) in attempts {
        let response =
            client.http.post(&url).header("content-type", content_type).body(body.clone()).send().await.unwrap();
        let status = response.status().as_u16();
        if content_type.starts_with("application/x-www-form-urlencoded") {
            // A broken or incomplete form: 400, or 404 for an id that decodes to no conversation.
            assert!(status == 400 || status == 404, "{content_type} {body:?}: {status}");
        } else {
            assert_eq!(status, 415, "{content_type} {body:?}");
        }
    }
    let (_, conversation) = client.conversation(&id).await;
    assert!(conversation["messages"].as_array().unwrap().is_empty(), "{conversation}");
    assert_eq!(conversation["status"], "idle");
    server.stop().await;
}

#[tokio::test]
async fn markup_in_page_content_is_rendered_as_text_and_script_links_are_dropped() {
    use content::{store::ContentStore, Block, NewPage};
    const PAYLOAD: &str = r#"<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>"#;
    let server = TestServer::start().await;
    let client = server.signed_in("demo").await;
    let page = NewPage {
        slug: "xss".into(),
        title: format!("Title {PAYLOAD}"),
        description: format!("Description {PAYLOAD}"),
        blocks: vec![
            Block::Heading { level: 1, text: format!("Heading {PAYLOAD}") },
            Block::Paragraph { text: format!("Paragraph {PAYLOAD}") },
            Block::Image { src: r#"x" onerror="window.__xss=3"#.into(), alt: format!("Alt {PAYLOAD}") },
            Block::Link { text: format!("Link {PAYLOAD}"), href: "javascript:window.__xss=4".into() },
            Block::Link { text: "Data link".into(), href: "data:text/html,<script>window.__xss=5</script>".into() },
        ],
    };
    let id = ContentStore::new(server.store().db().clone()).create_page(&page).await.unwrap();

    let html = client.http.get(format!("{}/pages/{id}", server.base)).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("Paragraph &lt;img src=x onerror="), "the payload is shown as text");
    assert!(!html.contains("<script>window.__xss"), "no script element from page content");
    assert!(!html.contains("<img src=x"), "no image element from page content");
    let tags = tags_of(&html);
    for (tag, attributes) in &tags {
        for (name, value) in attributes {
            assert!(!name.starts_with("on"), "an event handler attribute on <{tag}>: {name}={value}");
            if name == "href" || name == "src" {
                let value = value.to_ascii_lowercase();
                assert!(!value.starts_with("javascript:") && !value.starts_with("data:"), "<{tag} {name}={value}>");
            }
        }
    }
    assert!(!tags.iter().any(|(tag, _)| tag == "img"), "no image element from page content");
    // The framework's own scripts (hydration, serialised data that also carries the payload) all
    // bear the page's nonce; a script element that came from page content would not.
    let nonces: Vec<Option<&String>> = tags
        .iter()
        .filter(|(tag, _)| tag == "script")
        .map(|(_, attributes)| attributes.iter().find(|(name, _)| name == "nonce").map(|(_, value)| value))
        .collect();
    assert!(!nonces.is_empty() && nonces.iter().all(|nonce| nonce.is_some() && *nonce == nonces[0]), "{nonces:?}");
    assert_eq!(html.matches("</script>").count(), nonces.len(), "no script element was closed early by the payload");

    // The same page as data for the hydrated client carries the text, never markup to inject.
    let (status, view) = client.call_json("page", &[("id", &id.to_string())]).await;
    assert_eq!(status, 200);
    assert_eq!(view["blocks"][3]["href"], serde_json::Value::Null, "{view}");
    server.stop().await;
}

#[test]
fn the_tag_reader_sees_a_payload_that_broke_out_and_ignores_one_shown_as_text() {
    let inert = tags_of(r#"<p title="a &quot;onerror=x" class='b>c'>&lt;img src=x onerror="y"&gt;</p>"#);
    assert_eq!(inert.len(), 1);
    assert_eq!(inert[0].1, vec![("title".into(), "a \"onerror=x".into()), ("class".into(), "b>c".into())]);
    let live = tags_of(r#"<p>hi</p><img src=x onerror="window.__xss=1"><a href=javascript:go>"#);
    assert_eq!(live[1], ("img".into(), vec![("src".into(), "x".into()), ("onerror".into(), "window.__xss=1".into())]));
    assert_eq!(live[2].1[0], ("href".into(), "javascript:go".into()));
}

/// A request head longer than hyper's first read buffer (8 KiB) grows it, on the same connection,
/// before and after short ones.
#[tokio::test]
async fn a_request_head_longer_than_the_first_read_buffer_is_read_whole() {
    let server = TestServer::start().await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    for padding in [0, 12_000, 0, 60_000, 100, 5_000] {
        let response = client
            .http
            .post(format!("{}/api/conversations", server.base))
            .header("x-padding", "p".repeat(padding))
            .form(&[("", "")])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "a head with {padding} bytes of padding");
        let list: serde_json::Value = response.json().await.unwrap();
        assert_eq!(list[0]["id"], id.as_str(), "a head with {padding} bytes of padding");
    }
    server.stop().await;
}
