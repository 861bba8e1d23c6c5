//! Round trips to PostgreSQL, counted on the wire, for the test and the bench that hold Tourguide
//! to its counts (`server/tests/it/round_trips.rs`, the bench's PostgreSQL section): a TCP proxy
//! between a process and the database that counts what the process sends. Each Sync (the end of
//! an extended-protocol exchange: a statement, a prepare, sqlx's ping) and each simple Query is
//! one round trip: the client waits for the server's ReadyForQuery before it goes on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgConnectOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The startup messages that carry no type byte: SSL and GSS encryption requests (answered with one
/// byte), a cancel request (the connection ends), and the startup message itself.
const SSL_REQUEST: u32 = 80_877_103;
const GSS_REQUEST: u32 = 80_877_104;
const PROTOCOL_3: u32 = 196_608;

/// A counting proxy to a PostgreSQL server; it runs until the process ends.
#[derive(Clone, Debug)]
pub struct RoundTrips {
    count: Arc<AtomicU64>,
    address: String,
}

impl RoundTrips {
    /// A proxy to the server of `url`, listening on 127.0.0.1.
    pub async fn proxy(url: &str) -> std::io::Result<RoundTrips> {
        let options: PgConnectOptions =
            url.parse().map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidInput, error))?;
        let upstream = format!("{}:{}", options.get_host(), options.get_port());
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?.to_string();
        let count = Arc::new(AtomicU64::new(0));
        let counted = count.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&upstream).await else { continue };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let count = counted.clone();
                tokio::spawn(async move {
                    let (mut client_read, mut client_write) = client.into_split();
                    let (mut server_read, mut server_write) = server.into_split();
                    tokio::spawn(async move { tokio::io::copy(&mut server_read, &mut client_write).await });
                    let _ = forward_counting(&mut client_read, &mut server_write, &count).await;
                });
            }
        });
        Ok(RoundTrips { count, address })
    }

    /// `url` with its host and port replaced by the proxy's.
    pub fn url(&self, url: &str) -> String {
        let Ok(options) = url.parse::<PgConnectOptions>() else { return url.to_string() };
        let original = format!("{}:{}", options.get_host(), options.get_port());
        url.replacen(&original, &self.address, 1)
    }

    /// Round trips so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }

    /// Waits until nothing has been sent for a while (sqlx pings a connection that went back to
    /// its pool in a task of its own, after the request's answer).
    pub async fn settle(&self) {
        let mut last = self.count();
        loop {
            tokio::time::sleep(Duration::from_millis(150)).await;
            let now = self.count();
            if now == last {
                return;
            }
            last = now;
        }
    }

    /// The round trips `request` costs: the fewest over `times` tries (the first use of a
    /// statement on a connection prepares it, a round trip more), and the most.
    pub async fn of<F, Fut>(&self, times: usize, mut request: F) -> (u64, u64)
    where
        F: FnMut(usize) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let (mut fewest, mut most) = (u64::MAX, 0);
        for time in 0..times {
            self.settle().await;
            let before = self.count();
            request(time).await;
            self.settle().await;
            let spent = self.count() - before;
            fewest = fewest.min(spent);
            most = most.max(spent);
        }
        (fewest, most)
    }
}

/// Forwards the client's messages one by one, counting Sync ('S') and Query ('Q').
async fn forward_counting(
    from: &mut (impl AsyncReadExt + Unpin),
    to: &mut (impl AsyncWriteExt + Unpin),
    count: &AtomicU64,
) -> std::io::Result<()> {
    loop {
        let length = from.read_u32().await?;
        let mut body = vec![0; (length as usize).saturating_sub(4)];
        from.read_exact(&mut body).await?;
        to.write_u32(length).await?;
        to.write_all(&body).await?;
        let code = u32::from_be_bytes(body.get(..4).and_then(|code| code.try_into().ok()).unwrap_or_default());
        if code == PROTOCOL_3 {
            break;
        }
        if code != SSL_REQUEST && code != GSS_REQUEST {
            return Ok(());
        }
    }
    loop {
        let kind = from.read_u8().await?;
        let length = from.read_u32().await?;
        let mut body = vec![0; (length as usize).saturating_sub(4)];
        from.read_exact(&mut body).await?;
        if kind == b'S' || kind == b'Q' {
            count.fetch_add(1, Ordering::SeqCst);
        }
        to.write_u8(kind).await?;
        to.write_u32(length).await?;
        to.write_all(&body).await?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn round_trips_of_select_one(proxy: &RoundTrips, pool: &crate::PgConnections) -> (u64, u64) {
        proxy
            .of(3, |_| async move {
                sqlx::query("SELECT 1").execute(pool).await.unwrap();
            })
            .await
    }

    #[tokio::test]
    async fn a_statement_is_one_round_trip_and_two_on_sqlx_pool() {
        let Some(url) = crate::scratch_postgres().await.unwrap() else { return };
        let proxy = RoundTrips::proxy(&url).await.unwrap();
        let options: PgConnectOptions = proxy.url(&url).parse().unwrap();
        let ours = crate::PgConnections::open(options.clone(), 1).await.unwrap();
        // One Sync a statement; one more the first time (its prepare).
        assert_eq!(round_trips_of_select_one(&proxy, &ours).await, (1, 2));
        ours.close().await;
        let sqlx_pool = crate::PgConnections::open_sqlx(options, 1).await.unwrap();
        let (fewest, _) = round_trips_of_select_one(&proxy, &sqlx_pool).await;
        assert_eq!(fewest, 2, "sqlx's pool pings the connection as it goes back");
        sqlx_pool.close().await;
    }
}
