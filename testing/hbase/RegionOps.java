// RegionOps runs the region operations of a real HBase cluster's life for fault tests:
// list the live region servers and a table's regions, split a region, move one to
// another server, merge two adjacent ones, run the balancer. gohbase, the client hbtsdb
// uses, has none of these admin calls; this is HBase's own Java Admin client.
// testing/hbase/hbase.sh compiles it against the HBase classpath it caches and runs it:
//
//   testing/hbase/hbase.sh regionops <zookeeper host:port> <command> [args...]
//
// Commands (tables are full HBase names in the default namespace, e.g. "x-data"; a
// region is named by its encoded name, the hex digest the "regions" command prints):
//
//   servers                  the live region servers, one "host,port,startcode" a line
//   wait-servers <n>         wait until exactly n region servers are live and no region
//                            is in transition
//   regions <table>          the table's regions, one "encoded<TAB>start key hex<TAB>end
//                            key hex<TAB>server<TAB>rows" a line, in key order
//   split <table> [<key hex>]
//                            split the region holding the key; without a key, split the
//                            region with the most rows at its median row (a scan), so
//                            that both daughters hold data
//   move <encoded> [<server>]
//                            move a region to the server ("host,port,startcode"), or to
//                            any other live server
//   merge <encoded> <encoded>
//                            merge two adjacent regions of one table
//   balance                  switch the balancer on and run it once
//
// Every command that changes regions returns only once no region of the cluster is in
// transition, so the next command sees the result. There is no total time budget: a
// busy cluster takes as long as it takes; the wait fails only when the regions in
// transition do not change for HBTSDB_REGIONOPS_STALL_SECONDS [300].
//
// Output goes to stdout; progress and errors to stderr. Exit status 0 on success, 1 on
// failure, 2 on bad usage.

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.ClusterMetrics;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.filter.FirstKeyOnlyFilter;
import org.apache.hadoop.hbase.filter.KeyOnlyFilter;
import org.apache.hadoop.hbase.filter.FilterList;
import org.apache.hadoop.hbase.master.RegionState;
import org.apache.hadoop.hbase.util.Bytes;

public final class RegionOps {
  private static final long POLL_MILLIS = 250;

  private RegionOps() {}

  public static void main(String[] args) {
    if (args.length < 2 || args[0].lastIndexOf(':') <= 0) {
      usage();
    }
    String zk = args[0];
    int colon = zk.lastIndexOf(':');
    Configuration conf = HBaseConfiguration.create();
    conf.set(HConstants.ZOOKEEPER_QUORUM, zk.substring(0, colon));
    conf.set(HConstants.ZOOKEEPER_CLIENT_PORT, zk.substring(colon + 1));
    long stallMillis = 1000L * Long.parseLong(envOr("HBTSDB_REGIONOPS_STALL_SECONDS", "300"));
    String[] rest = Arrays.copyOfRange(args, 2, args.length);
    try (Connection conn = ConnectionFactory.createConnection(conf);
        Admin admin = conn.getAdmin()) {
      switch (args[1]) {
        case "servers":
          for (ServerName s : liveServers(admin)) {
            System.out.println(s.getServerName());
          }
          break;
        case "wait-servers":
          need(rest, 1);
          waitServers(admin, Integer.parseInt(rest[0]), stallMillis);
          break;
        case "regions":
          need(rest, 1);
          printRegions(conn, TableName.valueOf(rest[0]));
          break;
        case "split":
          need(rest, 1);
          split(conn, admin, TableName.valueOf(rest[0]), rest.length > 1 ? Bytes.fromHex(rest[1]) : null);
          waitNoTransition(admin, stallMillis);
          break;
        case "move":
          need(rest, 1);
          move(admin, rest[0], rest.length > 1 ? ServerName.valueOf(rest[1]) : null);
          waitNoTransition(admin, stallMillis);
          break;
        case "merge":
          need(rest, 2);
          admin.mergeRegionsAsync(new byte[][] {Bytes.toBytes(rest[0]), Bytes.toBytes(rest[1])}, false).get();
          System.err.println("RegionOps: merged " + rest[0] + " and " + rest[1]);
          waitNoTransition(admin, stallMillis);
          break;
        case "balance":
          admin.balancerSwitch(true, true);
          boolean ran = admin.balance();
          System.err.println("RegionOps: balancer ran: " + ran);
          waitNoTransition(admin, stallMillis);
          break;
        default:
          usage();
      }
    } catch (Exception e) {
      System.err.println("RegionOps: " + args[1] + ": " + e);
      System.exit(1);
    }
  }

  private static void usage() {
    System.err.println("usage: RegionOps <zookeeper host:port> servers|wait-servers <n>|regions <table>|"
        + "split <table> [<key hex>]|move <encoded> [<server>]|merge <encoded> <encoded>|balance");
    System.exit(2);
  }

  private static void need(String[] rest, int n) {
    if (rest.length < n) {
      usage();
    }
  }

  private static List<ServerName> liveServers(Admin admin) throws IOException {
    List<ServerName> servers = new ArrayList<>(admin.getRegionServers());
    Collections.sort(servers);
    return servers;
  }

  // waitServers waits until exactly n region servers are live and nothing is in
  // transition: a restarted server has registered and the master has reassigned the
  // regions of a dead one.
  private static void waitServers(Admin admin, int n, long stallMillis)
      throws IOException, InterruptedException {
    String last = "";
    long lastChange = System.nanoTime();
    while (true) {
      ClusterMetrics m = admin.getClusterMetrics(
          EnumSet.of(ClusterMetrics.Option.LIVE_SERVERS, ClusterMetrics.Option.DEAD_SERVERS,
              ClusterMetrics.Option.REGIONS_IN_TRANSITION));
      int live = m.getLiveServerMetrics().size();
      int rit = m.getRegionStatesInTransition().size();
      if (live == n && rit == 0) {
        System.err.println("RegionOps: " + live + " region servers live, no region in transition");
        return;
      }
      String now = live + " live, dead " + m.getDeadServerNames() + ", " + rit + " in transition";
      lastChange = stall(now, last, lastChange, stallMillis);
      last = now;
      Thread.sleep(POLL_MILLIS);
    }
  }

  private static long stall(String now, String last, long lastChange, long stallMillis)
      throws IOException {
    long t = System.nanoTime();
    if (!now.equals(last)) {
      System.err.println("RegionOps: " + now);
      return t;
    }
    if ((t - lastChange) / 1_000_000 >= stallMillis) {
      throw new IOException("no change for " + stallMillis / 1000 + "s: " + now);
    }
    return lastChange;
  }

  // waitNoTransition waits until no region of the cluster is in transition.
  private static void waitNoTransition(Admin admin, long stallMillis)
      throws IOException, InterruptedException {
    String last = "";
    long lastChange = System.nanoTime();
    while (true) {
      List<RegionState> rit = admin.getClusterMetrics(
          EnumSet.of(ClusterMetrics.Option.REGIONS_IN_TRANSITION)).getRegionStatesInTransition();
      if (rit.isEmpty()) {
        return;
      }
      StringBuilder now = new StringBuilder(rit.size() + " regions in transition:");
      for (RegionState s : rit) {
        now.append(' ').append(s.getRegion().getEncodedName()).append('=').append(s.getState());
      }
      lastChange = stall(now.toString(), last, lastChange, stallMillis);
      last = now.toString();
      Thread.sleep(POLL_MILLIS);
    }
  }

  private static void printRegions(Connection conn, TableName table) throws IOException {
    try (RegionLocator locator = conn.getRegionLocator(table); Table t = conn.getTable(table)) {
      for (HRegionLocation loc : locator.getAllRegionLocations()) {
        RegionInfo r = loc.getRegion();
        System.out.println(r.getEncodedName() + "\t" + Bytes.toHex(r.getStartKey()) + "\t"
            + Bytes.toHex(r.getEndKey()) + "\t" + loc.getServerName().getServerName() + "\t"
            + rowKeys(t, r).size());
      }
    }
  }

  // rowKeys scans a region's row keys (first cell only, no values).
  private static List<byte[]> rowKeys(Table t, RegionInfo r) throws IOException {
    Scan scan = new Scan().withStartRow(r.getStartKey()).withStopRow(r.getEndKey())
        .setFilter(new FilterList(new FirstKeyOnlyFilter(), new KeyOnlyFilter()))
        .setCaching(1000);
    List<byte[]> keys = new ArrayList<>();
    try (ResultScanner rs = t.getScanner(scan)) {
      for (Result res : rs) {
        keys.add(res.getRow());
      }
    }
    return keys;
  }

  private static void split(Connection conn, Admin admin, TableName table, byte[] key)
      throws Exception {
    try (RegionLocator locator = conn.getRegionLocator(table); Table t = conn.getTable(table)) {
      RegionInfo target = null;
      if (key == null) {
        List<byte[]> best = Collections.emptyList();
        for (HRegionLocation loc : locator.getAllRegionLocations()) {
          List<byte[]> keys = rowKeys(t, loc.getRegion());
          if (keys.size() > best.size()) {
            best = keys;
            target = loc.getRegion();
          }
        }
        if (best.size() < 2) {
          throw new IOException("no region of " + table + " holds two rows to split between");
        }
        key = best.get(best.size() / 2);
      } else {
        target = locator.getRegionLocation(key, true).getRegion();
      }
      admin.splitRegionAsync(target.getRegionName(), key).get();
      System.err.println("RegionOps: split " + target.getEncodedName() + " of " + table + " at "
          + Bytes.toHex(key));
    }
  }

  private static void move(Admin admin, String encoded, ServerName dest) throws IOException {
    if (dest == null) {
      ServerName from = null;
      for (ServerName s : liveServers(admin)) {
        for (RegionInfo r : admin.getRegions(s)) {
          if (r.getEncodedName().equals(encoded)) {
            from = s;
          }
        }
      }
      for (ServerName s : liveServers(admin)) {
        if (!s.equals(from)) {
          dest = s;
          break;
        }
      }
      if (dest == null) {
        throw new IOException("no other live region server to move " + encoded + " to");
      }
    }
    admin.move(Bytes.toBytes(encoded), dest);
    System.err.println("RegionOps: moved " + encoded + " to " + dest.getServerName());
  }

  private static String envOr(String name, String def) {
    String v = System.getenv(name);
    return v == null || v.isEmpty() ? def : v;
  }
}
