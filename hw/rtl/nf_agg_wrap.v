// SPDX-License-Identifier: GPL-2.0-or-later
//
// A few-pin wrapper of nf_agg for place-and-route (Verilog-2005).
//
// The datapath's ports (LANES * 17 + 50 bits in, about as many out) fit no
// FPGA package, and unconnected ports would let synthesis delete the logic.
// So the wrapper feeds every input bit from a shift register loaded PINS
// bits a cycle, and folds every output bit into PINS output pins with XOR
// trees (each pin the parity of one PINS-th of the outputs): every input
// bit can change every output pin, so no datapath logic can be removed.
// The wrapper adds IN_BITS flip-flops (the shift register) and about
// OUT_BITS / 3 LUTs (the XOR trees) to the datapath's own figures.
`default_nettype none

module nf_agg_wrap #(
    parameter LANES = 64,
    parameter PINS  = 8
) (
    input  wire            clk,
    input  wire            rst,
    input  wire            shift,           // load PINS input bits
    input  wire [PINS-1:0] sin,
    input  wire            valid,           // present the loaded line
    output reg             o_valid,
    output reg  [PINS-1:0] sout
);

    localparam CFG_BITS = 1 + 4 + 8 + 4 + 32;          // write path width tie thr
    localparam IN_BITS  = CFG_BITS + LANES / 8 + LANES + LANES * 16;
    localparam SR_BITS  = ((IN_BITS + PINS - 1) / PINS) * PINS;
    localparam OUT_BITS = 1 + 4 + LANES + LANES * 16 + 16;

    reg [SR_BITS-1:0] sr;
    always @(posedge clk)
        if (shift)
            sr <= {sr[SR_BITS-PINS-1:0], sin};

    wire                 d_valid, d_write;
    wire [0:0]           d_tag;
    wire [3:0]           d_err;
    wire [LANES-1:0]     d_rdata;
    wire [LANES*16-1:0]  d_cnt;
    wire [15:0]          d_reserved;

    nf_agg #(.LANES(LANES), .TAGW(1)) dp (
        .clk(clk), .rst(rst),
        .i_valid(valid),
        .i_write(sr[0]),
        .i_path(sr[4:1]),
        .i_width(sr[12:5]),
        .i_tie(sr[16:13]),
        .i_thr(sr[48:17]),
        .i_be(sr[CFG_BITS +: LANES / 8]),
        .i_data(sr[CFG_BITS + LANES / 8 +: LANES]),
        .i_cnt(sr[CFG_BITS + LANES / 8 + LANES +: LANES * 16]),
        .i_tag(sin[0]),
        .o_valid(d_valid), .o_write(d_write), .o_tag(d_tag), .o_err(d_err),
        .o_rdata(d_rdata), .o_cnt(d_cnt), .o_reserved(d_reserved));

    wire [OUT_BITS-1:0] outs = {d_write, d_err, d_rdata, d_cnt, d_reserved};
    reg  [PINS-1:0]     fold;
    integer k;
    always @* begin
        fold = {PINS{1'b0}};
        for (k = 0; k < OUT_BITS; k = k + 1)
            fold[k % PINS] = fold[k % PINS] ^ outs[k];
        fold[0] = fold[0] ^ d_tag[0];
    end

    always @(posedge clk) begin
        o_valid <= d_valid;
        sout    <= fold;
    end

endmodule

`default_nettype wire
