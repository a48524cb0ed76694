// FlushCompact flushes and major-compacts HBase tables and waits until the compactions
// are done, for benchmarks that measure the HFiles a table occupies (gohbase, the client
// hbtsdb uses, has neither admin call). testing/hbase/hbase.sh compiles it against the
// HBase classpath it caches and runs it:
//
//   testing/hbase/hbase.sh compact <zookeeper host:port> <table>...
//
// Tables are full HBase names in the default namespace ("tsdb-data"), done one after the
// other. For each:
//
//   1. Admin.flush: synchronous, the memstores are in HFiles when it returns.
//   2. Admin.majorCompact: asynchronous. Each region server selects the compaction of
//      every store before the call returns (CompactSplit.requestCompaction with
//      selectNow), so getCompactionState reports MAJOR until the compactions are done
//      and NONE afterwards.
//   3. getCompactionState is polled until it is NONE. There is no total budget: a big
//      table takes as long as it takes. The wait fails only when nothing moves for
//      HBTSDB_COMPACT_STALL_SECONDS [300]: the same compaction state, compacted and
//      compacting cell counts and store file counts over all regions of the table.
//   4. The table is disabled and enabled again. A compaction leaves the files it
//      replaced in the store directory until the region server's
//      CompactedHFilesDischarger chore archives them (every 2 minutes by default,
//      hbase.hfile.compaction.discharger.interval); closing a region archives them at
//      once (HStore.close), so afterwards each store directory holds exactly its live
//      HFiles, at most one per store after a major compaction.
//
// Progress goes to stderr; stdout stays empty. Exit status 0 on success, 1 on failure,
// 2 on bad usage.

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.RegionMetrics;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.CompactionState;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;

public final class FlushCompact {
  private static final long POLL_MILLIS = 500;
  private static final long REPORT_MILLIS = 10_000;

  private FlushCompact() {}

  public static void main(String[] args) {
    if (args.length < 2 || args[0].lastIndexOf(':') <= 0) {
      System.err.println("usage: FlushCompact <zookeeper host:port> <table>...");
      System.exit(2);
    }
    String zk = args[0];
    int colon = zk.lastIndexOf(':');
    Configuration conf = HBaseConfiguration.create();
    conf.set(HConstants.ZOOKEEPER_QUORUM, zk.substring(0, colon));
    conf.set(HConstants.ZOOKEEPER_CLIENT_PORT, zk.substring(colon + 1));
    long stallMillis = 1000L * Long.parseLong(envOr("HBTSDB_COMPACT_STALL_SECONDS", "300"));
    try (Connection conn = ConnectionFactory.createConnection(conf);
        Admin admin = conn.getAdmin()) {
      for (int i = 1; i < args.length; i++) {
        flushCompact(admin, TableName.valueOf(args[i]), stallMillis);
      }
    } catch (Exception e) {
      System.err.println("FlushCompact: " + e);
      System.exit(1);
    }
  }

  private static void flushCompact(Admin admin, TableName table, long stallMillis)
      throws IOException, InterruptedException {
    if (!admin.tableExists(table)) {
      throw new IOException("table " + table + " does not exist");
    }
    long start = System.nanoTime();
    admin.flush(table);
    admin.majorCompact(table);
    String last = "";
    long lastChange = System.nanoTime();
    long lastReport = lastChange;
    while (true) {
      CompactionState state = admin.getCompactionState(table);
      if (state == CompactionState.NONE) {
        break;
      }
      String now = state + " " + progress(admin, table);
      long t = System.nanoTime();
      if (!now.equals(last)) {
        last = now;
        lastChange = t;
      } else if (millis(t - lastChange) >= stallMillis) {
        throw new IOException("compaction of " + table + " made no progress for "
            + stallMillis / 1000 + "s (" + now + ")");
      }
      if (millis(t - lastReport) >= REPORT_MILLIS) {
        lastReport = t;
        System.err.println("FlushCompact: " + table + ": " + now);
      }
      Thread.sleep(POLL_MILLIS);
    }
    admin.disableTable(table);
    admin.enableTable(table);
    System.err.printf("FlushCompact: %s flushed, major-compacted and reopened in %.1fs%n",
        table, millis(System.nanoTime() - start) / 1000.0);
  }

  // progress describes the table's compactions: cells compacted of cells to compact and
  // store files, summed over its regions.
  private static String progress(Admin admin, TableName table) throws IOException {
    long compacted = 0, compacting = 0, files = 0;
    List<ServerName> servers = new ArrayList<>(admin.getRegionServers());
    for (ServerName server : servers) {
      for (RegionMetrics m : admin.getRegionMetrics(server, table)) {
        compacted += m.getCompactedCellCount();
        compacting += m.getCompactingCellCount();
        files += m.getStoreFileCount();
      }
    }
    return "cells " + compacted + "/" + compacting + ", " + files + " store files";
  }

  private static long millis(long nanos) {
    return nanos / 1_000_000;
  }

  private static String envOr(String name, String def) {
    String v = System.getenv(name);
    return v == null || v.isEmpty() ? def : v;
  }
}
