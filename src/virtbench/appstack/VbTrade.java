// virtbench's application suite: a small DayTrader-like trading application (seed 004 used
// IBM DayTrader 3 on WildFly with H2). Embedded Apache Tomcat 10 (Debian's libtomcat10-java)
// serves one servlet; every request runs a few reads/writes on an HSQLDB database (Debian's
// libhsqldb-java) in the same JVM, like DayTrader's "scenario" servlet: the server picks the
// action of each request from a fixed mix (quote, home, portfolio, account, buy, sell, login).
//
// Every query reads a bounded number of rows, whatever the tables' size (docs/application.md):
// HSQLDB takes a fair read lock per row it visits, so under concurrent users a scan of a
// few hundred rows costs tens of ms of lock hand-offs; and it applies ORDER BY ... LIMIT
// after reading every row the WHERE matches unless the ORDER BY names exactly the columns
// of an index (here, account_id first). Without this, the market summary scanned the whole
// quote table (a fifth of requests took 40-150 ms) and the last-orders query read all of an
// account's orders (throughput fell through a run as the orders table grew).
//
// Usage: java -cp <jars> VbTrade PORT BIND(or "*") DIR USERS QUOTES DB(file|cached|mem) MAX_THREADS
// Prints "VB-READY <port>" once the database is filled and Tomcat listens.

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.PrintWriter;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.catalina.Context;
import org.apache.catalina.Wrapper;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;

public final class VbTrade extends HttpServlet {
    private static final long serialVersionUID = 1L;
    // DayTrader's default scenario mix, simplified (percent of requests); buys and sells are
    // equally frequent as in DayTrader's, so the holding table does not grow through a run
    private static final String[] ACTIONS = {"quote", "home", "portfolio", "account", "buy", "sell", "login"};
    private static final int[] WEIGHTS = {40, 20, 12, 10, 7, 7, 4};
    private static final int HOLDINGS_PER_USER = 5;
    // Orders kept per account: every new order archives (deletes) the account's oldest, so
    // the orders table stays at accounts x ORDERS_KEPT rows. HSQLDB's memory tables live in
    // the JVM heap: unbounded, a run's ~2,400 orders/s would fill a 256 MiB heap within a
    // paper-length run and every interval would pay more garbage collection than the last.
    static final int ORDERS_KEPT = 20;
    private static final int SELL_TRIES = 8; // accounts a sell looks at for a holding

    private final String url;
    private final int users;
    private final int quotes;
    private final transient ThreadLocal<Connection> conn = new ThreadLocal<>();
    private final AtomicLong errors = new AtomicLong();

    VbTrade(String url, int users, int quotes) {
        this.url = url;
        this.users = users;
        this.quotes = quotes;
    }

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        String bind = args[1];
        String dir = args[2];
        int users = Integer.parseInt(args[3]);
        int quotes = Integer.parseInt(args[4]);
        String db = args[5];
        int maxThreads = Integer.parseInt(args[6]);
        // mem: no files; file: HSQLDB's default memory tables, every commit logged to its .log
        // file; cached: rows kept in its .data file with a cache in memory (disk-resident)
        String url = switch (db) {
            case "mem" -> "jdbc:hsqldb:mem:vbtrade";
            case "cached" -> "jdbc:hsqldb:file:" + dir + "/db/vbtrade;hsqldb.default_table_type=cached";
            default -> "jdbc:hsqldb:file:" + dir + "/db/vbtrade";
        };
        VbTrade app = new VbTrade(url, users, quotes);
        // what a server that is not ready in time was doing (quoted in virtbench's error)
        System.out.printf("vb-trade: populating %d accounts and %d quotes (db %s)%n", users, quotes, db);
        System.out.flush();
        long t0 = System.nanoTime();
        app.populate();
        long populated = System.nanoTime();

        Tomcat tomcat = new Tomcat();
        tomcat.setBaseDir(dir + "/tomcat");
        Connector connector = new Connector("HTTP/1.1");
        connector.setPort(port);
        if (!bind.equals("*")) {
            connector.setProperty("address", bind);
        }
        connector.setProperty("maxThreads", Integer.toString(maxThreads));
        connector.setProperty("acceptCount", "1024");
        tomcat.getService().addConnector(connector);
        tomcat.setConnector(connector);
        Context ctx = tomcat.addContext("", null);
        Wrapper servlet = Tomcat.addServlet(ctx, "trade", app);
        servlet.addMapping("/scenario");
        servlet.addMapping("/ping");
        tomcat.start();
        System.out.printf("VB-READY %d populate_ms=%d start_ms=%d%n", port,
                (populated - t0) / 1_000_000, (System.nanoTime() - populated) / 1_000_000);
        System.out.flush();
        tomcat.getServer().await();
    }

    // --- database -------------------------------------------------------------------------

    private Connection connection() throws SQLException {
        Connection c = conn.get();
        if (c == null || c.isClosed()) {
            c = DriverManager.getConnection(url, "SA", "");
            c.setAutoCommit(false);
            conn.set(c);
        }
        return c;
    }

    private static String symbol(int i) {
        return "s:" + i;
    }

    /** A clean database for every run: schema, quotes, accounts and their holdings. */
    void populate() throws SQLException {
        try (Connection c = DriverManager.getConnection(url, "SA", "");
                Statement s = c.createStatement()) {
            s.execute("SET DATABASE TRANSACTION CONTROL MVCC");
            s.execute("CREATE TABLE quote (symbol VARCHAR(16) PRIMARY KEY, company VARCHAR(64),"
                    + " price DECIMAL(14,2), open_price DECIMAL(14,2), low DECIMAL(14,2),"
                    + " high DECIMAL(14,2), volume DOUBLE, change DOUBLE)");
            // the market summary's top gainers: 5 index entries, not a scan of every quote
            s.execute("CREATE INDEX quote_change ON quote (change)");
            s.execute("CREATE TABLE account (id INT PRIMARY KEY, balance DECIMAL(14,2),"
                    + " open_balance DECIMAL(14,2), logins INT, last_login TIMESTAMP,"
                    + " full_name VARCHAR(64), email VARCHAR(64))");
            s.execute("CREATE TABLE holding (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
                    + " account_id INT, symbol VARCHAR(16), quantity DOUBLE, price DECIMAL(14,2),"
                    + " opened TIMESTAMP)");
            s.execute("CREATE INDEX holding_account ON holding (account_id, id)");
            s.execute("CREATE TABLE orders (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
                    + " account_id INT, symbol VARCHAR(16), kind VARCHAR(4), quantity DOUBLE,"
                    + " price DECIMAL(14,2), status VARCHAR(8), opened TIMESTAMP)");
            s.execute("CREATE INDEX orders_account ON orders (account_id, id)");
            c.setAutoCommit(false);
            ThreadLocalRandom r = ThreadLocalRandom.current();
            try (PreparedStatement q = c.prepareStatement("INSERT INTO quote VALUES (?,?,?,?,?,?,?,?)")) {
                for (int i = 0; i < quotes; i++) {
                    BigDecimal p = price(r.nextDouble(1, 200));
                    q.setString(1, symbol(i));
                    q.setString(2, "Company " + i + " Inc.");
                    q.setBigDecimal(3, p);
                    q.setBigDecimal(4, p);
                    q.setBigDecimal(5, p);
                    q.setBigDecimal(6, p);
                    q.setDouble(7, 0);
                    q.setDouble(8, 0);
                    q.addBatch();
                }
                q.executeBatch();
            }
            Timestamp now = new Timestamp(System.currentTimeMillis());
            try (PreparedStatement a = c.prepareStatement("INSERT INTO account VALUES (?,?,?,?,?,?,?)");
                    PreparedStatement h = c.prepareStatement("INSERT INTO holding"
                            + " (account_id, symbol, quantity, price, opened) VALUES (?,?,?,?,?)");
                    PreparedStatement o = c.prepareStatement("INSERT INTO orders (account_id,"
                            + " symbol, kind, quantity, price, status, opened) VALUES (?,?,?,?,?,?,?)")) {
                for (int u = 0; u < users; u++) {
                    a.setInt(1, u);
                    a.setBigDecimal(2, price(1_000_000));
                    a.setBigDecimal(3, price(1_000_000));
                    a.setInt(4, 0);
                    a.setTimestamp(5, now);
                    a.setString(6, "User " + u);
                    a.setString(7, "uid" + u + "@example.org");
                    a.addBatch();
                    for (int k = 0; k < HOLDINGS_PER_USER; k++) {
                        h.setInt(1, u);
                        h.setString(2, symbol(r.nextInt(quotes)));
                        h.setDouble(3, 100);
                        h.setBigDecimal(4, price(r.nextDouble(1, 200)));
                        h.setTimestamp(5, now);
                        h.addBatch();
                    }
                    for (int k = 0; k < ORDERS_KEPT; k++) { // the account's order history
                        o.setInt(1, u);
                        o.setString(2, symbol(r.nextInt(quotes)));
                        o.setString(3, "buy");
                        o.setDouble(4, 100);
                        o.setBigDecimal(5, price(r.nextDouble(1, 200)));
                        o.setString(6, "closed");
                        o.setTimestamp(7, now);
                        o.addBatch();
                    }
                }
                a.executeBatch();
                h.executeBatch();
                o.executeBatch();
            }
            c.commit();
        }
    }

    private static BigDecimal price(double v) {
        return BigDecimal.valueOf(v).setScale(2, RoundingMode.HALF_UP);
    }

    // --- requests -------------------------------------------------------------------------

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        resp.setContentType("text/html;charset=UTF-8");
        if (req.getServletPath().equals("/ping")) {
            try (Statement s = connection().createStatement();
                    ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM account")) {
                rs.next();
                resp.getWriter().printf("ok accounts=%d errors=%d%n", rs.getInt(1), errors.get());
                connection().commit();
            } catch (SQLException e) {
                resp.sendError(500, e.toString());
            }
            return;
        }
        ThreadLocalRandom r = ThreadLocalRandom.current();
        String action = pick(r.nextInt(100));
        int uid = r.nextInt(users);
        String sym = symbol(r.nextInt(quotes));
        StringBuilder page = new StringBuilder(8192);
        page.append("<html><head><title>vbtrade ").append(action).append("</title></head><body>\n");
        for (int attempt = 0; ; attempt++) {
            Connection c = null;
            try {
                c = connection();
                act(c, action, uid, sym, page);
                c.commit();
                break;
            } catch (SQLException e) {
                rollback(c);
                // MVCC write conflicts (SQLSTATE 40001) are retried, as an application would
                if (attempt < 3 && "40001".equals(e.getSQLState())) {
                    page.setLength(0);
                    continue;
                }
                errors.incrementAndGet();
                resp.sendError(500, action + ": " + e);
                return;
            }
        }
        page.append("</body></html>\n");
        PrintWriter w = resp.getWriter();
        w.write(page.toString());
    }

    private static String pick(int roll) {
        int acc = 0;
        for (int i = 0; i < ACTIONS.length; i++) {
            acc += WEIGHTS[i];
            if (roll < acc) {
                return ACTIONS[i];
            }
        }
        return ACTIONS[0];
    }

    private static void rollback(Connection c) {
        if (c != null) {
            try {
                c.rollback();
            } catch (SQLException ignored) {
                // the connection is reopened by the next request if it is broken
            }
        }
    }

    private void act(Connection c, String action, int uid, String sym, StringBuilder page)
            throws SQLException {
        switch (action) {
            case "quote" -> quote(c, sym, page);
            case "home" -> home(c, uid, page);
            case "portfolio" -> portfolio(c, uid, page);
            case "account" -> account(c, uid, page);
            case "buy" -> buy(c, uid, sym, page);
            case "sell" -> sell(c, uid, users, page);
            default -> login(c, uid, page);
        }
    }

    private static void quote(Connection c, String sym, StringBuilder page) throws SQLException {
        try (PreparedStatement q = c.prepareStatement(
                "SELECT symbol, company, price, open_price, low, high, volume, change FROM quote WHERE symbol = ?")) {
            q.setString(1, sym);
            try (ResultSet rs = q.executeQuery()) {
                page.append("<table>\n");
                while (rs.next()) {
                    page.append("<tr>");
                    for (int i = 1; i <= 8; i++) {
                        page.append("<td>").append(rs.getString(i)).append("</td>");
                    }
                    page.append("</tr>\n");
                }
                page.append("</table>\n");
            }
        }
    }

    private static void home(Connection c, int uid, StringBuilder page) throws SQLException {
        account(c, uid, page);
        // the market summary: the top gainers
        try (PreparedStatement q = c.prepareStatement(
                "SELECT symbol, price, change FROM quote ORDER BY change DESC LIMIT 5");
                ResultSet rs = q.executeQuery()) {
            page.append("<h2>market summary</h2><ul>\n");
            while (rs.next()) {
                page.append("<li>").append(rs.getString(1)).append(' ').append(rs.getBigDecimal(2))
                        .append(' ').append(rs.getDouble(3)).append("</li>\n");
            }
            page.append("</ul>\n");
        }
    }

    private static void portfolio(Connection c, int uid, StringBuilder page) throws SQLException {
        try (PreparedStatement q = c.prepareStatement(
                "SELECT h.id, h.symbol, h.quantity, h.price, q.price FROM holding h"
                        + " JOIN quote q ON q.symbol = h.symbol WHERE h.account_id = ?")) {
            q.setInt(1, uid);
            try (ResultSet rs = q.executeQuery()) {
                page.append("<table>\n");
                while (rs.next()) {
                    BigDecimal gain = rs.getBigDecimal(5).subtract(rs.getBigDecimal(4))
                            .multiply(BigDecimal.valueOf(rs.getDouble(3)));
                    page.append("<tr><td>").append(rs.getLong(1)).append("</td><td>")
                            .append(rs.getString(2)).append("</td><td>").append(rs.getDouble(3))
                            .append("</td><td>").append(gain).append("</td></tr>\n");
                }
                page.append("</table>\n");
            }
        }
    }

    private static void account(Connection c, int uid, StringBuilder page) throws SQLException {
        try (PreparedStatement q = c.prepareStatement(
                "SELECT balance, open_balance, logins, last_login, full_name, email FROM account WHERE id = ?")) {
            q.setInt(1, uid);
            try (ResultSet rs = q.executeQuery()) {
                while (rs.next()) {
                    page.append("<p>").append(rs.getString(5)).append(" &lt;").append(rs.getString(6))
                            .append("&gt; balance ").append(rs.getBigDecimal(1)).append(" logins ")
                            .append(rs.getInt(3)).append("</p>\n");
                }
            }
        }
        try (PreparedStatement q = c.prepareStatement(
                "SELECT id, symbol, kind, quantity, price, status FROM orders WHERE account_id = ?"
                        + " ORDER BY account_id DESC, id DESC LIMIT 5")) { // the index's columns
            q.setInt(1, uid);
            try (ResultSet rs = q.executeQuery()) {
                page.append("<ol>\n");
                while (rs.next()) {
                    page.append("<li>").append(rs.getLong(1)).append(' ').append(rs.getString(2))
                            .append(' ').append(rs.getString(3)).append(' ').append(rs.getDouble(4))
                            .append(' ').append(rs.getBigDecimal(5)).append("</li>\n");
                }
                page.append("</ol>\n");
            }
        }
    }

    /** Deletes the account's oldest order (see ORDERS_KEPT). */
    private static void archiveOldestOrder(Connection c, int uid) throws SQLException {
        long oldest;
        try (PreparedStatement q = c.prepareStatement("SELECT id FROM orders WHERE account_id = ?"
                + " ORDER BY account_id, id LIMIT 1")) { // the index's columns
            q.setInt(1, uid);
            try (ResultSet rs = q.executeQuery()) {
                if (!rs.next()) {
                    return;
                }
                oldest = rs.getLong(1);
            }
        }
        try (PreparedStatement d = c.prepareStatement("DELETE FROM orders WHERE id = ?")) {
            d.setLong(1, oldest);
            if (d.executeUpdate() == 0) { // a concurrent order archived it first: retried
                throw new SQLException("order " + oldest + " archived concurrently", "40001");
            }
        }
    }

    private static BigDecimal currentPrice(Connection c, String sym) throws SQLException {
        try (PreparedStatement q = c.prepareStatement("SELECT price FROM quote WHERE symbol = ?")) {
            q.setString(1, sym);
            try (ResultSet rs = q.executeQuery()) {
                return rs.next() ? rs.getBigDecimal(1) : BigDecimal.ONE;
            }
        }
    }

    /** An order: the order row, the holding, the account's balance, the quote's price/volume. */
    private static void trade(Connection c, int uid, String sym, String kind, double qty,
            BigDecimal price, StringBuilder page) throws SQLException {
        Timestamp now = new Timestamp(System.currentTimeMillis());
        try (PreparedStatement o = c.prepareStatement("INSERT INTO orders"
                + " (account_id, symbol, kind, quantity, price, status, opened) VALUES (?,?,?,?,?,?,?)")) {
            o.setInt(1, uid);
            o.setString(2, sym);
            o.setString(3, kind);
            o.setDouble(4, qty);
            o.setBigDecimal(5, price);
            o.setString(6, "closed");
            o.setTimestamp(7, now);
            o.executeUpdate();
        }
        archiveOldestOrder(c, uid);
        BigDecimal total = price.multiply(BigDecimal.valueOf(qty));
        try (PreparedStatement a = c.prepareStatement("UPDATE account SET balance = balance + ? WHERE id = ?")) {
            a.setBigDecimal(1, kind.equals("buy") ? total.negate() : total);
            a.setInt(2, uid);
            a.executeUpdate();
        }
        // the price moves a little with every order (DayTrader's updateQuotePriceVolume)
        double factor = ThreadLocalRandom.current().nextDouble(0.9, 1.1);
        try (PreparedStatement q = c.prepareStatement("UPDATE quote SET price = ?, volume = volume + ?,"
                + " change = ? - open_price, low = LEAST(low, ?), high = GREATEST(high, ?) WHERE symbol = ?")) {
            BigDecimal np = price(Math.max(0.01, price.doubleValue() * factor));
            q.setBigDecimal(1, np);
            q.setDouble(2, qty);
            q.setBigDecimal(3, np);
            q.setBigDecimal(4, np);
            q.setBigDecimal(5, np);
            q.setString(6, sym);
            q.executeUpdate();
        }
        page.append("<p>order ").append(kind).append(' ').append(sym).append(' ').append(qty)
                .append(" at ").append(price).append("</p>\n");
    }

    private static void buy(Connection c, int uid, String sym, StringBuilder page) throws SQLException {
        BigDecimal price = currentPrice(c, sym);
        trade(c, uid, sym, "buy", 100, price, page);
        try (PreparedStatement h = c.prepareStatement("INSERT INTO holding"
                + " (account_id, symbol, quantity, price, opened) VALUES (?,?,?,?,?)")) {
            h.setInt(1, uid);
            h.setString(2, sym);
            h.setDouble(3, 100);
            h.setBigDecimal(4, price);
            h.setTimestamp(5, new Timestamp(System.currentTimeMillis()));
            h.executeUpdate();
        }
    }

    /**
     * Sells the account's oldest holding. An account with nothing left sells another random
     * account's instead, as DayTrader keeps sells as frequent as buys (its "sellDeficit"):
     * else empty accounts turn sells into page views and the holding table grows through a run.
     */
    private static void sell(Connection c, int uid, int users, StringBuilder page) throws SQLException {
        for (int k = 0; k < SELL_TRIES; k++) {
            int who = k == 0 ? uid : ThreadLocalRandom.current().nextInt(users);
            long id = -1;
            String sym = null;
            double qty = 0;
            try (PreparedStatement q = c.prepareStatement(
                    "SELECT id, symbol, quantity FROM holding WHERE account_id = ?"
                            + " ORDER BY account_id, id LIMIT 1")) { // the index's columns
                q.setInt(1, who);
                try (ResultSet rs = q.executeQuery()) {
                    if (rs.next()) {
                        id = rs.getLong(1);
                        sym = rs.getString(2);
                        qty = rs.getDouble(3);
                    }
                }
            }
            if (sym == null) {
                continue;
            }
            try (PreparedStatement d = c.prepareStatement("DELETE FROM holding WHERE id = ?")) {
                d.setLong(1, id);
                if (d.executeUpdate() == 0) { // a concurrent request sold it first: retried
                    throw new SQLException("holding " + id + " sold concurrently", "40001");
                }
            }
            trade(c, who, sym, "sell", qty, currentPrice(c, sym), page);
            return;
        }
        portfolio(c, uid, page); // nothing found to sell: show the portfolio, as DayTrader does
    }

    private static void login(Connection c, int uid, StringBuilder page) throws SQLException {
        try (PreparedStatement a = c.prepareStatement(
                "UPDATE account SET logins = logins + 1, last_login = ? WHERE id = ?")) {
            a.setTimestamp(1, new Timestamp(System.currentTimeMillis()));
            a.setInt(2, uid);
            a.executeUpdate();
        }
        home(c, uid, page);
    }
}
