//! A bounded fuzzing campaign over the parsers kemu runs on what clients
//! send: request bodies (JSON, YAML, protobuf), label and field selectors,
//! query strings and integers, quantities, durations, timestamps, CIDRs,
//! CronJob schedules (with the search for the next run), the exec shell's
//! grammar and the port-forward HTTP responder. Each target takes strings
//! drawn from its grammar's alphabet and mutations of valid seeds, and must
//! answer every one (an error is fine; a panic or a hang is not). The
//! patch and managed-fields proptests live beside their code.
//!
//! Cases per target: `CASES` (`PROPTEST_CASES` overrides it).

use kemu_dataplane::api::{deadline, options, protobuf, request, selectors};
use kemu_dataplane::authz::admission::quantity::Quantity;
use kemu_dataplane::controllers::{cronjob, obj};
use kemu_dataplane::exec::{Container, fs, ports};
use kemu_dataplane::label_selector::LabelSelector;
use kemu_dataplane::network::cidr::Cidr;
use proptest::prelude::*;

/// An nginx container with its default page.
fn container() -> Container {
    let mut root = fs::Node::dir(0o755, 0);
    fs::put(
        &mut root,
        &fs::components("/", "/usr/share/nginx/html/index.html"),
        fs::Node::file(b"hi\n".to_vec(), 0o644, 0),
    );
    Container {
        fs: fs::Fs::new(fs::shared(root)),
        env: Vec::new(),
        cwd: "/".into(),
        hostname: "web".into(),
        image: "nginx".into(),
    }
}

const CASES: u32 = 2000;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(CASES);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A seed with bytes replaced, inserted and cut at random places.
fn mutated(seeds: &'static [&'static str]) -> impl Strategy<Value = String> {
    (
        prop::sample::select(seeds),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 0..8),
    )
        .prop_map(|(seed, edits)| {
            let mut b = seed.as_bytes().to_vec();
            for (at, byte, op) in edits {
                let i = if b.is_empty() { 0 } else { at.index(b.len()) };
                match op {
                    0 if !b.is_empty() => b[i] = byte,
                    1 => b.insert(i, byte),
                    _ if !b.is_empty() => {
                        b.remove(i);
                    }
                    _ => b.push(byte),
                }
            }
            String::from_utf8_lossy(&b).into_owned()
        })
}

/// Text from a grammar's alphabet, or a mutated seed.
fn input(alphabet: &'static str, seeds: &'static [&'static str]) -> BoxedStrategy<String> {
    prop_oneof![
        prop::string::string_regex(&format!("[{alphabet}]{{0,64}}")).unwrap(),
        mutated(seeds),
        any::<String>(),
    ]
    .boxed()
}

const BODIES: &[&str] = &[
    r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"y"}},"data":{"k":"v"}}"#,
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: busybox\n    args: [\"a\", 1, 2.5e300]\n",
    "a: &x [*x, *x]\nb: !!binary aGk=\n",
    "[[[[[[[[[[{}]]]]]]]]]]",
];

proptest! {
    #![proptest_config(config())]

    #[test]
    fn bodies_decode_or_are_refused(s in input(r#"\[\]{}:,"'a-z0-9 \n\-&*!|>."#, BODIES)) {
        let _ = request::decode_json(s.as_bytes());
        let _ = request::decode_yaml(s.as_bytes());
        let _ = request::decode_object("application/yaml", s.as_bytes());
        let _ = request::decode_object("application/json", s.as_bytes());
    }

    #[test]
    fn protobuf_bodies_decode_or_are_refused(b in prop_oneof![
        prop::collection::vec(any::<u8>(), 0..256),
        prop::collection::vec(any::<u8>(), 0..64).prop_map(|mut v| {
            let mut b = b"k8s\x00".to_vec();
            b.append(&mut v);
            b
        }),
    ]) {
        let _ = protobuf::decode(&b);
    }

    #[test]
    fn label_selectors_parse_or_are_refused(s in input(r"a-z0-9=!,()\-_./ ", &[
        "app=web,tier!=db", "env in (prod, dev),!canary", "x notin (a),y", "a.b/c==d",
    ])) {
        let _ = LabelSelector::parse(&s);
    }

    #[test]
    fn field_selectors_parse_or_are_refused(s in input(r"a-z.=!,\\ ", &[
        "metadata.name=web", "spec.nodeName!=n1,status.phase=Running", "metadata.namespace==a\\,b",
    ])) {
        let _ = selectors::FieldSelector::parse(&s, "", "Pod");
        let _ = selectors::FieldSelector::parse(&s, "apps", "Deployment");
    }

    #[test]
    fn queries_and_integers_parse_or_are_refused(s in input(r"a-z0-9=&%+\-", &[
        "limit=500&continue=eyJ2IjoxfQ", "gracePeriodSeconds=9223372036854775808", "watch=1&timeoutSeconds=-1",
    ])) {
        let _ = request::Params::parse(&s);
        let _ = options::parse_int(&s);
    }

    #[test]
    fn quantities_parse_or_are_refused(s in input(r"0-9.eEkKMGTPimun+\-", &[
        "100m", "1.5Gi", "1e3", "9223372036854775807Ei", "0.000000001", "-1k",
    ])) {
        if let Some(q) = Quantity::parse(&s) {
            let _ = q.milli();
            let _ = q.to_string();
        }
    }

    #[test]
    fn durations_times_and_cidrs_parse_or_are_refused(s in input(r"0-9.hmsunµTZ:+\-/", &[
        "1h30m", "500ms", "99999999999999999999h", "2026-12-07T06:55:10Z", "10.0.0.0/16", "2026-12-07T06:55:10.123+01:00",
        "-9223372036854775808ns", ".5µs", "1.0000000000000000000001h",
    ])) {
        let _ = obj::parse_duration(&s);
        let _ = deadline::parse_go_duration(&s);
        let _ = obj::parse_time(&s);
        if let Some(c) = Cidr::parse(&s) {
            let _ = c.usable();
        }
    }

    #[test]
    fn schedules_parse_and_find_their_next_run(s in input(r"0-9*/,\- LW#@a-z", &[
        "*/5 * * * *", "0 0 31 2 *", "@hourly", "59 23 29 2 1", "0 0 1-31/2 * MON-FRI", "@midnight",
    ])) {
        if let Ok(cron) = cronjob::parse_schedule(&s) {
            let from = chrono::DateTime::<chrono::Utc>::from_timestamp(1_800_000_000, 0).unwrap();
            let _ = cron.find_next_occurrence(&from, false);
        }
    }

    #[test]
    fn forwarded_http_is_answered_or_refused(reqs in prop::collection::vec(input(
        r"A-Za-z0-9 /:?=&%\r\n.\-",
        &[
            "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /echo?msg=a%20b HTTP/1.1\r\n\r\n",
            "POST /x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
            "HEAD /index.html HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        ],
    ), 1..4)) {
        for server in [ports::Server::Nginx, ports::Server::Netexec] {
            let mut listeners = ports::Listeners::new("uid");
            listeners.add(80, server, container());
            let mut conn = listeners.connect(80).unwrap();
            let now = chrono::DateTime::<chrono::Utc>::from_timestamp(0, 0).unwrap();
            for r in &reqs {
                let _ = conn.feed(r.as_bytes(), now);
            }
        }
    }

    #[test]
    fn shell_scripts_parse_or_are_refused(s in input(r#"a-z0-9 ;|&()<>$`'"{}\\\n#=*?\[\]!"#, &[
        "cat /etc/config/x; exit 3", "for i in 1 2; do echo $i; done | wc -l",
        "if [ -f /x ]; then echo ${A:-b}; fi", "echo $((1 + (2 * 3))) 2>&1 >/dev/null",
    ])) {
        let _ = kemu_dataplane::exec::shell::parse::parse(&s);
    }
}
