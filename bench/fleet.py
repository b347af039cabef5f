"""Workers on "other machines" for the bench: `airlock worker --listen` over TLS on
loopback, with a CA and a certificate made here (the `cryptography` package the MCP
SDK already brings), so the cost of a call through a remote worker (TCP and TLS)
can be set beside the local worker (a unix socket), and a load run can spread
leased sessions over two workers.
"""

import datetime
import os
import pathlib
import subprocess

TOKEN = "bench-worker-token-of-at-least-thirty-two-characters"


def certificates(tmp):
    """(ca.pem, cert.pem, key.pem) under `tmp`: a CA of the bench's own and a
    certificate for `localhost` it signed."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "airlock bench CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    tmp = pathlib.Path(tmp)
    paths = (tmp / "ca.pem", tmp / "cert.pem", tmp / "key.pem")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


class Workers:
    """`count` workers listening on loopback over TLS, started now; `toml` is the
    `[[workers]]` list a control plane reaches them with (the token comes from
    AIRLOCK_WORKER_TOKEN: `env()`)."""

    def __init__(self, binary, tmp, count, chrome):
        self.tmp = pathlib.Path(tmp)
        self.ca, cert, key = certificates(self.tmp)
        self.processes, self.addresses = [], []
        env = dict(os.environ, AIRLOCK_WORKER_TOKEN=TOKEN, AIRLOCK_CHROME=chrome, TMPDIR=str(self.tmp))
        env.pop("AIRLOCK_CONFIG", None)
        for _ in range(count):
            process = subprocess.Popen(
                [str(binary), "worker", "--listen", "127.0.0.1:0", "--tls-cert", str(cert), "--tls-key", str(key)],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            line = process.stdout.readline()
            if not line:
                raise RuntimeError("a bench worker did not start")
            self.processes.append(process)
            self.addresses.append(line.strip().rsplit(" ", 1)[-1])

    def toml(self):
        return "".join(
            f'[[workers]]\naddress = "{a}"\nserver_name = "localhost"\nca_file = "{self.ca}"\n'
            for a in self.addresses)

    @staticmethod
    def env(env):
        env["AIRLOCK_WORKER_TOKEN"] = TOKEN
        return env

    def stop(self):
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class Postgres:
    """Debian's PostgreSQL (the newest installed, or AIRLOCK_PG_BIN), a cluster of the
    bench's own on a loopback port, with its default durability (fsync and
    synchronous commit on, as a deployment runs it): the shared store whose cost per
    call `airlock-postgres` shows beside `airlock` (SQLite). Root runs it as `nobody`."""

    def __init__(self):
        import glob
        import pwd
        import socket
        import tempfile
        import threading

        bins = os.environ.get("AIRLOCK_PG_BIN") or sorted(
            glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))[-1]
        bins = pathlib.Path(bins)
        # Under /tmp, reachable by the server's user (the bench's own temp dir is not).
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="airlock-bench-pg-"))
        data = self.dir / "data"
        data.mkdir()
        user = {}
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            for path in (self.dir, data):
                os.chown(path, nobody.pw_uid, nobody.pw_gid)
            user = {"user": nobody.pw_uid, "group": nobody.pw_gid}
        env = dict(os.environ, HOME="/nonexistent")
        subprocess.run([str(bins / "initdb"), "--auth=trust", "--encoding=UTF8", "--username", "airlock",
                        "--pgdata", str(data)], env=env, check=True, stdout=subprocess.DEVNULL, **user)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.process = subprocess.Popen(
            [str(bins / "postgres"), "-D", str(data), "-p", str(port), "-c", "listen_addresses=127.0.0.1",
             "-c", "unix_socket_directories="],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **user)
        said = []
        for line in self.process.stderr:
            if "ready to accept connections" in line:
                break
            said.append(line)
        else:
            raise RuntimeError("the bench's postgres did not start: " + "".join(said[-20:]))
        # Its log is read to the end: a full pipe would stall the server.
        threading.Thread(target=lambda: [None for _ in self.process.stderr], daemon=True).start()
        self.url = f"postgres://airlock@127.0.0.1:{port}/postgres"

    def stop(self):
        import shutil
        import signal

        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
