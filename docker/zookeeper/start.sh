#!/bin/sh
# ZooKeeper in the foreground: the public image's own entry point, or Debian's package (its jars
# in /usr/share/java, run as the user zk), standalone, data in /data, 4lw `srvr`/`ruok` allowed
# (the health check).
set -e
if [ -x /docker-entrypoint.sh ]; then
  export ZOO_4LW_COMMANDS_WHITELIST="${ZOO_4LW_COMMANDS_WHITELIST:-srvr,ruok}"
  exec /docker-entrypoint.sh zkServer.sh start-foreground
fi
cat > /tmp/zoo.cfg <<CFG
tickTime=2000
initLimit=10
syncLimit=5
dataDir=/data
clientPort=2181
admin.enableServer=false
4lw.commands.whitelist=srvr,ruok
CFG
# zookeeper.jar's manifest Class-Path names its dependencies; slf4j-simple logs to the output
CP=/usr/share/java/zookeeper.jar
[ -f /usr/share/java/slf4j-simple.jar ] && CP="$CP:/usr/share/java/slf4j-simple.jar"
exec setpriv --reuid=zk --regid=zk --init-groups \
  java -Xmx256m -cp "$CP" \
  org.apache.zookeeper.server.quorum.QuorumPeerMain /tmp/zoo.cfg
