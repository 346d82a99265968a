"""Who is asking, on this machine: the user that owns the other end of a loopback connection, as
the kernel lists it in /proc/net/tcp and tcp6 (Linux). A token or cookie that reached another
local user (a shared /tmp, a server of theirs on another port that the browser sent the cookie
to, as cookies ignore ports) is still refused to them."""
from __future__ import annotations

import ipaddress
import os
from typing import Optional

ESTABLISHED = "01"


def same_user(client: Optional[tuple], server: Optional[tuple]) -> bool:
    """Whether the peer of a connection (client, server as (host, port)) is this process's user:
    true where it cannot be told (not loopback, or no /proc/net/tcp)."""
    address = _address(client[0]) if client and server else None
    if address is None or not address.is_loopback:
        return True
    owner = owner_of(f"/proc/net/tcp{6 if address.version == 6 else ''}", int(client[1]), int(server[1]))
    return owner is None or owner == os.geteuid()


def owner_of(table: str, client_port: int, server_port: int) -> Optional[int]:
    """The uid of the socket in `table` whose local port is `client_port` and remote port
    `server_port` (reading a table costs the kernel a few milliseconds: one table, once a request)."""
    try:
        with open(table, encoding="ascii") as rows:
            next(rows, None)
            for row in rows:
                fields = row.split()
                if (fields[3] == ESTABLISHED and int(fields[1].rsplit(":", 1)[1], 16) == client_port
                        and int(fields[2].rsplit(":", 1)[1], 16) == server_port):
                    return int(fields[7])
    except OSError:
        pass
    return None


def _address(host: str):
    """The peer's address; an IPv4 one an IPv6 socket shows as ::ffff:a.b.c.d (whose socket is
    in the IPv4 table) as IPv4."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    return getattr(address, "ipv4_mapped", None) or address
