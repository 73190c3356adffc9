terasim-pir 1
model tiny
layers 1
sequence 8
devices 2
batch 1
shape strategy=- dp=1 pp=1 tp=1 v=1
# device 0
op F.s0.m0.t0-8 FWD dev=0 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=0-8
op S.0 SEND dev=0 stream=comm peer=1 tensor=x.0to1 bytes=16
op R.0 RECV dev=0 stream=comm peer=1 tensor=x.1to0 bytes=16
op B.s0.m0.t0-8 BWD dev=0 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=0-8
# device 1
op S.1 SEND dev=1 stream=comm peer=0 tensor=x.1to0 bytes=16
op R.1 RECV dev=1 stream=comm peer=0 tensor=x.0to1 bytes=16
